package org.acemq.amqp.testsupport;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What the extensions put into JUnit's extension store: a resource (a broker, a client, a schema, a registration) that
 * JUnit closes when the context that holds it ends, on every Jupiter line a Spring Boot line manages.
 *
 * <p>Jupiter 5.12 (Boot 3.5) closes only {@link ExtensionContext.Store.CloseableResource} values; 5.13 and later (and
 * 6.x, on Boot 4) close {@link AutoCloseable} values as well, and a value that is both is closed once, as an
 * {@code AutoCloseable}, without the deprecation warning they log for a value that is a {@code CloseableResource}
 * only. The wrapper is both; it closes its resource at most once whichever way it is reached.
 *
 * @param <T> the resource's type
 */
@SuppressWarnings("deprecation") // CloseableResource: deprecated since Jupiter 5.13, the only interface 5.12 closes
final class StoredResource<T extends AutoCloseable> implements AutoCloseable,
        ExtensionContext.Store.CloseableResource {

    private final T resource;
    private final AtomicBoolean closed = new AtomicBoolean();

    private StoredResource(T resource) {
        this.resource = Objects.requireNonNull(resource, "resource");
    }

    /**
     * @param resource the resource
     * @param <T> its type
     * @return a store value that closes it
     */
    static <T extends AutoCloseable> StoredResource<T> of(T resource) {
        return new StoredResource<>(resource);
    }

    /**
     * @param value a value of the extension store: a {@code StoredResource}, or null
     * @param type the resource's type
     * @param <R> the resource's type
     * @return the resource it wraps, or null
     */
    static <R> R unwrap(Object value, Class<R> type) {
        return value == null ? null : type.cast(((StoredResource<?>) value).resource);
    }

    /** Closes the resource, the first time only. */
    @Override
    public void close() throws Exception {
        if (closed.compareAndSet(false, true)) {
            resource.close();
        }
    }
}

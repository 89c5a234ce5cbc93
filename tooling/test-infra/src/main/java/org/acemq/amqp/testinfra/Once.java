package org.acemq.amqp.testinfra;

import java.util.Objects;
import java.util.function.Supplier;

/**
 * A value made on first use and shared by the whole JVM; a failure to make it is remembered and thrown again to every
 * later caller, so that a broker that cannot be had fails each test that asks for it with the same reason instead of
 * being tried again by each.
 *
 * <p><b>Threading:</b> thread-safe; the first caller makes the value and the others wait.
 *
 * @param <T> the value's type
 */
public final class Once<T> {

    private final Supplier<T> factory;
    private T value;
    private RuntimeException failure;

    /** @param factory makes the value; called at most once */
    public Once(Supplier<T> factory) {
        this.factory = Objects.requireNonNull(factory, "factory");
    }

    /**
     * @return the value, made now if this is the first call
     * @throws RuntimeException what making it threw, on this and every later call
     */
    public synchronized T get() {
        if (value != null) {
            return value;
        }
        if (failure != null) {
            throw failure;
        }
        try {
            value = factory.get();
            return value;
        } catch (RuntimeException e) {
            failure = e;
            throw e;
        }
    }
}

package org.acemq.amqp.spring;

import java.util.Set;

/**
 * The application's {@link AcemqListener}s by id, to stop, start, pause and resume one while the application runs.
 * A bean of the auto-configuration:
 *
 * <pre>{@code
 * registry.listener("orders").pause();
 * }</pre>
 */
public interface AcemqListenerRegistry {

    /** @return the ids of every listener, in the order they were found */
    Set<String> listenerIds();

    /**
     * @param id a listener's id ({@link AcemqListener#id()}, by default its name)
     * @return its handle
     * @throws IllegalArgumentException if no listener has that id
     */
    AcemqListenerHandle listener(String id);
}

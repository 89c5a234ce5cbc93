package org.acemq.amqp.spring;

/**
 * One {@link AcemqListener} of a running {@link AcemqListenerContainer}, from the {@link AcemqListenerRegistry}.
 * The operations act on the listener's subscription of the container's consumer (see
 * {@link org.acemq.amqp.consumer.SubscriptionControl}); they throw {@link IllegalStateException} while the container
 * is not running. When the container starts (again), each listener starts as its {@code autoStartup} says, unpaused.
 * Thread-safe; not to be called from the listener's own method ({@link #stop()} would wait for itself).
 */
public interface AcemqListenerHandle {

    /** @return the listener's id */
    String id();

    /** @return the listener's name: the key of its {@code acemq.listeners.<name>.*} properties and its metric tag */
    String name();

    /**
     * @return the name of the connection the listener consumes on: {@code default} ({@code acemq.connection.*}) or a
     *     name of {@code acemq.connections}
     */
    default String connection() {
        return AcemqProperties.DEFAULT_CONNECTION;
    }

    /**
     * Attaches the listener's link again after {@link #stop()} (or {@code autoStartup=false}); returns at once, the
     * attach runs in the background (retried with back-off while the broker refuses it).
     */
    void start();

    /**
     * Stops the listener: no more credit, messages received or claimed but not started go back to the broker
     * ({@code released}), running invocations finish (for at most {@code acemq.consumer.shutdown-timeout}) and are
     * settled, then the link is detached. Blocks until then. Only {@code AT_LEAST_ONCE} listeners can be stopped.
     */
    void stop();

    /**
     * Pauses the listener: its link gets no more credit, and the credit the broker holds is taken back (a drain);
     * messages already received are handled as usual. Publishes an {@link AcemqListenerPausedEvent}.
     */
    void pause();

    /** Grants credit again after {@link #pause()}. Publishes an {@link AcemqListenerResumedEvent}. */
    void resume();

    /** @return whether the container runs and this listener is not stopped */
    boolean isRunning();

    /** @return whether the container runs and this listener is paused */
    boolean isPaused();
}

package org.acemq.amqp.spring;

import java.time.Duration;

/**
 * A running, unpaused listener has handled no message for its {@code idleEventInterval} (published again every
 * interval while it stays idle). The time is measured from the end of its last invocation, or from its start.
 */
public class AcemqListenerIdleEvent extends AcemqListenerEvent {

    private static final long serialVersionUID = 1L;

    /** How long the listener has been idle. */
    private final Duration idleTime;

    /**
     * @param source the listener's handle
     * @param listenerId the listener's id
     * @param idleTime how long it has been idle
     */
    public AcemqListenerIdleEvent(Object source, String listenerId, Duration idleTime) {
        super(source, listenerId);
        this.idleTime = idleTime;
    }

    /** @return how long the listener has been idle */
    public Duration getIdleTime() {
        return idleTime;
    }

    @Override
    public String toString() {
        return "AcemqListenerIdleEvent[" + getListenerId() + ", idle " + idleTime + "]";
    }
}

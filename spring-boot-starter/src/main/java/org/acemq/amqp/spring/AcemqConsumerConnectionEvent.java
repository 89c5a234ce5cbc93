package org.acemq.amqp.spring;

import org.springframework.context.ApplicationEvent;

/**
 * The container's consumer connected to the broker (first connection and every reconnect) or lost its connection
 * (also when the container stops). Noticed by a check every half second at most, so an outage shorter than that
 * may go unreported; the source is the {@link AcemqListenerContainer}.
 */
public class AcemqConsumerConnectionEvent extends ApplicationEvent {

    private static final long serialVersionUID = 1L;

    /** Whether the consumer is connected now. */
    private final boolean connected;

    /**
     * @param source the container
     * @param connected whether the consumer is connected now
     */
    public AcemqConsumerConnectionEvent(Object source, boolean connected) {
        super(source);
        this.connected = connected;
    }

    /** @return true: connected; false: disconnected */
    public boolean isConnected() {
        return connected;
    }

    @Override
    public String toString() {
        return "AcemqConsumerConnectionEvent[" + (connected ? "connected" : "disconnected") + "]";
    }
}

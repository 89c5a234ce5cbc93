package org.acemq.amqp.spring;

import org.springframework.context.ApplicationEvent;

/**
 * One of the container's consumers connected to its broker (first connection and every reconnect) or lost its
 * connection (also when the container stops). There is a consumer per connection in use ({@link #getConnection()}:
 * {@code default} for {@code acemq.connection.*}, else a name of {@code acemq.connections}). Noticed by a check every
 * half second at most, so an outage shorter than that may go unreported; the source is the
 * {@link AcemqListenerContainer}.
 */
public class AcemqConsumerConnectionEvent extends ApplicationEvent {

    private static final long serialVersionUID = 1L;

    /** Whether the consumer is connected now. */
    private final boolean connected;
    /** The name of the consumer's connection. */
    private final String connection;

    /**
     * An event about the {@code default} connection.
     *
     * @param source the container
     * @param connected whether the consumer is connected now
     */
    public AcemqConsumerConnectionEvent(Object source, boolean connected) {
        this(source, AcemqProperties.DEFAULT_CONNECTION, connected);
    }

    /**
     * @param source the container
     * @param connection the name of the consumer's connection
     * @param connected whether the consumer is connected now
     */
    public AcemqConsumerConnectionEvent(Object source, String connection, boolean connected) {
        super(source);
        this.connection = java.util.Objects.requireNonNull(connection, "connection");
        this.connected = connected;
    }

    /** @return the connection's name: {@code default} ({@code acemq.connection.*}) or a name of acemq.connections */
    public String getConnection() {
        return connection;
    }

    /** @return true: connected; false: disconnected */
    public boolean isConnected() {
        return connected;
    }

    @Override
    public String toString() {
        return "AcemqConsumerConnectionEvent[" + connection + ", " + (connected ? "connected" : "disconnected") + "]";
    }
}

package org.acemq.amqp.consumer.internal;

import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/** What the {@link Connector} reports to the consumer, on the thread where it happens. */
interface ConnectorEvents {


    /**
     * Connected: the broker's identity is known; attach everything.
     *
     * @param failFast whether a subscription that cannot attach fails the start (else it is retried)
     */
    void connected(BrokerProfile profile, Connection connection, boolean failFast) throws ClientException;

    /** @param first whether this is the first report of this outage (later ones are failed reconnect attempts) */
    void interrupted(Throwable cause, boolean first);

    /** protonj2 reconnected, to this broker. */
    void reconnected(BrokerProfile profile);

    /**
     * The connection is gone and the connector opens a new one by itself (a token credential is set): every link
     * ends now; {@link #connected} attaches new ones on the new connection.
     */
    void lost(Throwable cause);

    /** After {@link #lost}: the new connection is up and attached. */
    void restored();

    /** The connection is gone for good, or the first one could not be made: the consumer has failed. */
    void failed();

    /** @return whether the consumer has failed already */
    boolean hasFailed();
}

package org.acemq.amqp.consumer.internal;

import org.apache.qpid.protonj2.client.Message;

/**
 * What arrived, as the intake took it and the read stage read it: the protonj2 delivery and the link that accounts
 * for it, and the message, its key, fingerprint, ordering key and envelope (or why it could not be decoded). Never
 * changes once read; how far the delivery has come is its {@link Delivery}.
 *
 * @param amqp the protonj2 delivery
 * @param link the link incarnation that accounts for it
 * @param counted whether it holds a slot of its link (false if it was taken after the link ended)
 * @param receivedNanos when the intake took it (ticker)
 * @param message the decoded message, or null if it cannot be decoded
 * @param decodeError why it cannot be decoded, or null
 * @param key the store key, or null if it has none (or cannot be decoded)
 * @param fingerprint the content's fingerprint, or null when the subscription computes none
 * @param orderKey the key its processing is ordered by, or null (no ordering, or the message carries none)
 * @param envelope the handler's view of it, or null if it has no key
 * @param encodedSize its encoded size in bytes (what its transfer frames carried), as the read stage found it; 0 until
 *     read, and for one that cannot be decoded
 */
record Arrival(org.apache.qpid.protonj2.client.Delivery amqp, ReceiverLink link, boolean counted, long receivedNanos,
               Message<?> message, String decodeError, String key, String fingerprint, String orderKey,
               EnvelopeImpl envelope, int encodedSize) {

    /**
     * @return a delivery just taken from the client, not read yet (the read stage replaces it with what it read; an
     *     unexpected failure before that settles it as it is)
     */
    static Arrival taken(org.apache.qpid.protonj2.client.Delivery amqp, ReceiverLink link, boolean counted,
                         long receivedNanos) {
        return new Arrival(amqp, link, counted, receivedNanos, null, null, null, null, null, null, 0);
    }

    /** @return this arrival, read: decoded, keyed and fingerprinted; {@code encodedSize} bytes on the wire */
    Arrival read(Message<?> message, String key, String fingerprint, String orderKey, EnvelopeImpl envelope,
                 int encodedSize) {
        return new Arrival(amqp, link, counted, receivedNanos, message, null, key, fingerprint, orderKey, envelope,
                encodedSize);
    }

    /** @return this arrival, which cannot be decoded */
    Arrival undecodable(String error) {
        return new Arrival(amqp, link, counted, receivedNanos, null, error, null, null, null, null, 0);
    }
}

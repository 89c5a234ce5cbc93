package org.acemq.amqp.consumer;

/**
 * What became of one message the runtime sent, as reported to {@link ConsumerObserver#sent}. A bounded set, fit for a
 * metric tag.
 */
public enum SendResult {
    /** The broker accepted it: it is sent. */
    ACCEPTED,
    /**
     * The broker refused it: it rejected the message, or refused a sender for its address (an address that does not
     * exist on a broker that does not create addresses, a missing permission). Trying again does not help until
     * someone changes the broker or the address.
     */
    REFUSED,
    /**
     * It was not taken, for a reason that may pass: the broker released it or settled it as not delivered, did not
     * answer within the connection's {@code requestTimeout}, or the connection was lost.
     */
    FAILED
}

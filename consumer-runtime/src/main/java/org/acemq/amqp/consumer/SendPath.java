package org.acemq.amqp.consumer;

/**
 * How a message a handler sent reached the broker, as reported to {@link ConsumerObserver#sent}. A bounded set, fit
 * for a metric tag.
 */
public enum SendPath {
    /**
     * Sent by the runtime right after the handler returned, before the incoming message was confirmed: every store
     * but the JDBC store's transactional handler.
     */
    DIRECT,
    /**
     * Dispatched from the store's transactional outbox after the handler's transaction committed, or by a copy of the
     * incoming message that found its outbox not dispatched yet.
     */
    OUTBOX,
    /** Dispatched from the store's outbox by the outbox sweep (at connect and on a schedule). */
    SWEEP,
    /**
     * Sent in the AMQP transaction that also accepts the incoming message ({@link AcknowledgementMode#TRANSACTIONAL}).
     * {@link SendResult#ACCEPTED} means accepted into that transaction; a transaction that then rolls back sends
     * nothing, the incoming message runs again and its sends are reported again.
     */
    TRANSACTION
}

package org.acemq.amqp.consumer.internal;

/**
 * How a verdict reaches the broker, one strategy per acknowledgement mode: {@link DirectSettlement} (at-least-once),
 * {@link TransactionalSettlement} (outcomes enlisted in AMQP local transactions) and {@link PreSettledSettlement}
 * (at-most-once). A strategy sends what the verdict says, reports it to the observer and frees the delivery's slot,
 * exactly once; it never decides an outcome.
 */
interface Settlement {

    /**
     * @param delivery the delivery
     * @param verdict a SETTLE verdict
     * @return whether the outcome was sent or enlisted (false: abandoned, because its link or connection is gone)
     */
    boolean settle(Delivery delivery, Verdict verdict);

    /**
     * A link of the subscription is attached, before it is granted credit.
     *
     * @param link the link
     * @throws org.apache.qpid.protonj2.client.exceptions.ClientException if the strategy cannot work on it
     */
    default void attached(ReceiverLink link) throws org.apache.qpid.protonj2.client.exceptions.ClientException {
    }

    /** The connection was interrupted. */
    default void connectionInterrupted() {
    }

    /** The handlers have finished: flush what is pending. */
    default void stop() {
    }
}

package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

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

    /**
     * What every strategy does once a delivery's fate is known: report it to the observer and free its slot.
     *
     * @param name the subscription name
     * @param observer the observer
     * @param allocator the allocator whose slot the delivery holds
     */
    record Report(String name, ConsumerObserver observer, CreditAllocator allocator) {

        /**
         * Settles a delivery outside a transaction ({@link ReceiverLink#settle}) and reports it. The observer hears
         * {@code settled} (or {@code abandoned}) once the disposition is handed over; if the connection then fails
         * before the I/O thread writes it, it hears {@link ConsumerObserver#dispositionDropped} as well, always after
         * {@code settled}.
         *
         * @return whether the outcome was handed to a live link
         */
        boolean settleDirect(Delivery d, Outcome outcome, String condition, String description, SettleReason reason) {
            Dropped dropped = new Dropped(this);
            boolean sent = false;
            try {
                sent = d.link().settle(d.arrival.amqp(), outcome, condition, description, dropped);
            } finally {
                done(d, outcome, reason, sent);
                dropped.run();
            }
            return sent;
        }

        /**
         * @param sent whether the outcome reached a live link (else the delivery is abandoned)
         * @return {@code sent}
         */
        boolean done(Delivery d, Outcome outcome, SettleReason reason, boolean sent) {
            try {
                if (sent) {
                    observer.settled(name, d.key(), outcome, reason);
                } else {
                    observer.abandoned(name);
                }
                return sent;
            } finally {
                d.finish(allocator);
            }
        }
    }

    /**
     * Reports a dropped disposition after the delivery's {@code settled}: it runs twice when the disposition was
     * dropped (once when it was reported settled, once when the I/O thread dropped it, in either order), and reports
     * on the second run; once only otherwise.
     */
    final class Dropped extends java.util.concurrent.atomic.AtomicInteger implements Runnable {
        private static final long serialVersionUID = 1L;
        private final transient Report report;

        Dropped(Report report) {
            this.report = report;
        }

        @Override
        public void run() {
            if (incrementAndGet() == 2) {
                report.observer().dispositionDropped(report.name());
            }
        }
    }
}

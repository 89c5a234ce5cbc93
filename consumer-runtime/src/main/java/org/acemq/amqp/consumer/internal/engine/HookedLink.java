package org.acemq.amqp.consumer.internal.engine;

import org.acemq.amqp.consumer.Outcome;
import org.apache.qpid.protonj2.client.Delivery;

/**
 * The engine hooks of one link incarnation, as {@link ProtonInternals#hook} hands them out: grants, drains and
 * settled dispositions written by the runtime's own tasks on the connection's I/O thread.
 */
public interface HookedLink {

    /** Grants {@code credits} without waiting (on the I/O thread; dropped if the link has closed). */
    void grant(int credits);

    /** Drains the link without waiting; the answer goes to {@link HookEvents#drained}. */
    void drain();

    /**
     * Settles a delivery of this link outside a transaction, and returns at once: the disposition is written by a
     * task of the runtime's own on the connection's I/O thread, batched with the link's other dispositions (one
     * task and one flush per batch), and only if, at the moment of writing, the delivery's engine has neither
     * failed nor shut down and its link, session and connection are open. Otherwise it is dropped, logged at
     * DEBUG, and {@code dropped} runs. This is what protonj2's {@code accept()} does outside a transaction minus
     * its credit top-up, which is off (credit window 0).
     *
     * @param delivery a delivery from this link's receiver
     * @param outcome the outcome ({@code MODIFIED} is sent as delivery-failed, not undeliverable-here)
     * @param condition the rejection's error condition ({@code REJECTED} only)
     * @param description the rejection's description ({@code REJECTED} only), or null
     * @param dropped runs on the I/O thread if the disposition was dropped there; must not block
     * @return {@link Handover#QUEUED}; {@link Handover#REFUSED} if the I/O thread takes no more tasks (the
     *     connection is closed); {@link Handover#UNSUPPORTED} if the engine delivery cannot be read (use the
     *     client API)
     */
    Handover settle(Delivery delivery, Outcome outcome, String condition, String description, Runnable dropped);

    /** What became of a disposition handed to {@link #settle}. */
    enum Handover {
        /** Queued on the I/O thread, which writes it or drops it. */
        QUEUED,
        /** The I/O thread refused the task: nothing will be written. */
        REFUSED,
        /** The engine delivery cannot be read: settle through protonj2's client API instead. */
        UNSUPPORTED
    }
}

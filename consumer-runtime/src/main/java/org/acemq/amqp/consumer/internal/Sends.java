package org.acemq.amqp.consumer.internal;

import java.util.List;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.SendPath;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The send stage: what a handler sent through its envelope goes out after the handler returned and before its
 * claim's end is recorded. Two ways, by what the handler's transaction did with it:
 * <ul>
 *   <li>nothing (every store but the JDBC store's transactional handler): sent now, and waited for until the broker
 *       accepted each; if one is not, the incoming message counts as failed (its claim is released, it goes back, and
 *       its handler's next run sends the same messages with the same ids);</li>
 *   <li>written to the store's outbox in the transaction that committed ({@link EnvelopeImpl.Outbox#STORED}): handed
 *       to the consumer's {@link OutboxRelay}, which sends them from its own thread and marks the accepted ones
 *       dispatched; the incoming message is done at once (its work, sends included, is committed). Those the broker
 *       does not take stay pending in the outbox ({@link OutboxDispatcher}: the sweep sends them).</li>
 * </ul>
 * A handler that threw sends nothing.
 */
final class Sends {

    private static final Logger LOG = LoggerFactory.getLogger(Sends.class);

    private final String name;
    private final String who;
    private final Outlet senders;
    private final OutboxStore outbox;
    private final OutboxDispatcher dispatcher;
    private final OutboxRelay relay;
    private final boolean transactional;

    /**
     * @param senders where messages go out
     * @param outbox the store's outbox, or null if the store keeps none
     */
    Sends(String name, Outlet senders, OutboxStore outbox) {
        this(name, senders, outbox, null, null, false);
    }

    /**
     * @param senders where messages go out
     * @param outbox the store's outbox, or null if the store keeps none
     * @param state the consumer's view of the outbox (told of failed dispatches), or null
     * @param relay dispatches what a handler's transaction committed to the outbox, after the handler thread moved on;
     *     null to dispatch it on the handler thread (a store without an outbox of its own)
     * @param transactional a {@code TRANSACTIONAL} subscription: what a handler sent goes out in the AMQP transaction
     *     that accepts its message ({@link TransactionalSettlement}), not here
     */
    Sends(String name, Outlet senders, OutboxStore outbox, OutboxState state, OutboxRelay relay,
          boolean transactional) {
        this.name = name;
        this.who = "Subscription '" + name + "'";
        this.senders = senders;
        this.outbox = outbox;
        this.dispatcher = new OutboxDispatcher(outbox, senders, state);
        this.relay = relay;
        this.transactional = transactional;
    }

    /**
     * @param d a delivery whose handler ran
     * @param facts its facts with the handler's result
     * @return the facts, with a failure if what the handler sent could not be sent
     */
    DeliveryFacts send(Delivery d, DeliveryFacts facts) {
        EnvelopeImpl envelope = d.envelope();
        List<Outbound> sends = envelope.sends();
        if (sends.isEmpty() || facts.failure() != null) {
            return facts;
        }
        switch (envelope.outbox()) {
            case DISCARDED:
                return facts;
            case STORED:
                if (relay != null) {
                    relay.post(envelope.storedEntries(), sends, who); // committed: safe in the outbox either way
                } else {
                    d.dispatched = dispatcher.dispatch(envelope.storedEntries(), sends, SendPath.OUTBOX, who);
                }
                return facts;
            default:
                if (transactional) {
                    d.sendsInTransaction = true; // sent with the accept, in one AMQP transaction
                    return facts;
                }
                SendFailedException failure = first(senders.send(sends, SendPath.DIRECT));
                if (failure == null) {
                    return facts;
                }
                LOG.warn("Subscription '{}': {} sent by the handler of {}; the message goes back and its handler "
                        + "runs again (the same messages, with the same ids)", name, failure.getMessage(), d.logId());
                return facts.sendFailed(failure);
        }
    }

    private static SendFailedException first(List<SendFailedException> results) {
        for (SendFailedException f : results) {
            if (f != null) {
                return f;
            }
        }
        return null;
    }

    /**
     * A copy of a message whose handler's work is committed arrived (a duplicate): what that handler wrote to the
     * outbox and was not dispatched yet (the process died in between) is dispatched now, before the copy is accepted.
     *
     * @param d the copy
     */
    void duplicate(Delivery d) {
        if (outbox == null || d.key() == null) {
            return;
        }
        List<OutboxEntry> pending;
        try {
            pending = outbox.pendingOutbox(d.key());
        } catch (RuntimeException e) {
            LOG.warn("Subscription '{}': could not read the outbox of {} ({}); the sweep dispatches what is pending",
                    name, d.logId(), Errors.describe(e));
            return;
        }
        if (pending.isEmpty()) {
            return;
        }
        d.dispatched = dispatcher.dispatch(pending, null, SendPath.OUTBOX, who);
        if (!d.dispatched.isEmpty()) {
            LOG.info("Subscription '{}': a copy of {} dispatched {} message(s) its handler had sent", name, d.logId(),
                    d.dispatched.size());
        }
    }
}

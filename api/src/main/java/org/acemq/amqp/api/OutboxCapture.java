package org.acemq.amqp.api;

import java.util.List;
import java.util.Optional;

/**
 * How a store's transactional handler takes the messages a handler sent out of the runtime, to write them into its
 * {@link OutboxStore} in the handler's own transaction. The runtime's envelopes implement it; applications do not
 * call it (a service-provider interface, as {@link OutboxStore}).
 *
 * <p>Protocol, on the handler's thread, within one handler call: after the application's work, read
 * {@link #outboxEntries()} and write them in the transaction that also records the confirm; after the commit call
 * {@link #outboxStored()}: the runtime then dispatches those entries from the outbox and marks them dispatched, instead
 * of sending them itself. If the transaction is rolled back and the handler still returns normally (another owner
 * committed the message first), call {@link #outboxDiscarded()}: nothing is sent. If the handler throws, nothing is
 * sent either way.
 */
public interface OutboxCapture {

    /**
     * @param envelope a handler's envelope
     * @return its capture, if the envelope comes from a runtime that supports sending
     */
    static Optional<OutboxCapture> of(Envelope envelope) {
        return envelope instanceof OutboxCapture c ? Optional.of(c) : Optional.empty();
    }

    /** @return the messages sent so far in this handler call, encoded, in send order (empty if none) */
    List<OutboxEntry> outboxEntries();

    /**
     * The entries returned by {@link #outboxEntries()} were committed to the store's outbox with the confirm.
     *
     * @throws IllegalStateException if the handler sent more after they were read
     */
    void outboxStored();

    /** The handler's transaction was rolled back but the handler returns normally: send nothing. */
    void outboxDiscarded();
}

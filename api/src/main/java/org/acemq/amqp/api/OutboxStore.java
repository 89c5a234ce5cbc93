package org.acemq.amqp.api;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A store that keeps the messages a handler sends in the handler's own database transaction (a <em>transactional
 * outbox</em>), so that the handler's effects, the confirm of the incoming message and the messages it sends commit
 * together. The runtime dispatches what such a store holds after the commit, marks it dispatched, and repairs what a
 * crash left undispatched: at start and on a schedule (a sweep), and when a copy of the incoming message arrives.
 *
 * <p>This is a service-provider interface: applications do not call it. The JDBC store implements it; the entries are
 * written by its transactional handler, inside the transaction ({@link OutboxCapture}).
 *
 * <p><b>Threading:</b> safe for concurrent use; every method may block on I/O.
 */
public interface OutboxStore {

    /**
     * @param incomingKey an incoming message's idempotency key
     * @return the entries its handler sent that are not dispatched yet, in position order (empty if none)
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    List<OutboxEntry> pendingOutbox(String incomingKey);

    /**
     * The oldest entries not dispatched yet, for the sweep that repairs what a crash left behind.
     *
     * <p>A store may hand an entry to one sweep at a time: it may hold the entries it returns (and an entry whose
     * dispatch {@linkplain #outboxFailed failed}) for a while, during which no sweep, of this process or another,
     * returns them again. The JDBC store holds them for its lease, so that processes sweeping at once dispatch
     * different entries and a failing entry is retried once per lease. {@link #pendingOutbox(String)} ignores holds.
     *
     * @param minAge only entries written at least this long ago (so the sweep does not race the dispatch that follows
     *     every commit)
     * @param limit the most entries to return, {@code >= 1}
     * @return up to {@code limit} entries, oldest first
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    List<OutboxEntry> pendingOutbox(Duration minAge, int limit);

    /**
     * Marks entries dispatched (the broker accepted them). Dispatched entries are kept for the store's retention and
     * purged with its confirmed identifiers. Marking an entry twice, or one the store no longer has, is not an error.
     *
     * <p>A mark need not be durable when this returns: a store may queue it and write it shortly after, with other
     * work (the JDBC store does). Its own later outbox calls must see it; a mark lost before it was written (the
     * process stopped) leaves the entry pending, and it is dispatched again, which the receiver absorbs by its stable
     * message-id. A store that defers marks keeps them for a short time only, well under the sweep's minimum age.
     *
     * @param entries the entries the broker accepted
     * @throws StoreUnavailableException if the store writes the mark in this call and the backing storage cannot be
     *     reached (the entries stay pending and are dispatched again: the receiver absorbs the copy by its stable
     *     message-id)
     */
    void outboxDispatched(List<OutboxEntry> entries);

    /**
     * Records that dispatching an entry failed; the entry stays pending and is tried again by the sweep.
     *
     * @param entry the entry
     * @param error why, for operators (bounded by the store)
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    void outboxFailed(OutboxEntry entry, String error);

    /**
     * @return how many entries wait for dispatch and when the oldest of them was written
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    Status outboxStatus();

    /**
     * What waits in the outbox.
     *
     * @param pending the entries not dispatched yet
     * @param oldestPending when the oldest of them was written, or null if none waits
     * @param failing the pending entries whose last dispatch failed
     */
    record Status(long pending, Instant oldestPending, long failing) {
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.api.StoreUnavailableException;

/**
 * An {@link OutboxStore} in memory for the sweep's unit tests, with the JDBC store's hold semantics: an entry the sweep
 * took, or whose dispatch failed, is not handed to a sweep again for {@code hold}; {@code down} makes every call throw
 * {@link StoreUnavailableException}. Times come from the test's clock. Every call is written down.
 */
final class FakeOutbox implements OutboxStore {

    /** One row. */
    static final class Row {
        final OutboxEntry entry;
        final Instant createdAt;
        Instant heldUntil = Instant.MIN;
        boolean dispatched;
        String error;

        Row(OutboxEntry entry, Instant createdAt) {
            this.entry = entry;
            this.createdAt = createdAt;
        }
    }

    private final Clock clock;
    private final Duration hold;
    private final Map<String, Row> rows = new LinkedHashMap<>();
    final List<String> calls = new CopyOnWriteArrayList<>();
    volatile boolean down;

    FakeOutbox(Clock clock, Duration hold) {
        this.clock = clock;
        this.hold = hold;
    }

    /** @return an entry of a real encoded message, as the runtime writes it */
    static OutboxEntry entry(String incomingKey, int position, String address) {
        return Outbound.of(incomingKey, position, address, OutgoingMessage.of("body of " + incomingKey + " #" + position),
                null, null).entry();
    }

    /** Adds entries committed now. */
    synchronized void add(OutboxEntry... entries) {
        for (OutboxEntry e : entries) {
            rows.put(e.messageId(), new Row(e, clock.instant()));
        }
    }

    synchronized Row row(String messageId) {
        return rows.get(messageId);
    }

    synchronized long dispatchedCount() {
        return rows.values().stream().filter(r -> r.dispatched).count();
    }

    private void check(String call) {
        calls.add(call);
        if (down) {
            throw new StoreUnavailableException("test: the outbox store is down");
        }
    }

    @Override
    public synchronized List<OutboxEntry> pendingOutbox(String incomingKey) {
        check("pendingOutbox(" + incomingKey + ")");
        return rows.values().stream().filter(r -> !r.dispatched && r.entry.incomingKey().equals(incomingKey))
                .map(r -> r.entry).toList();
    }

    @Override
    public synchronized List<OutboxEntry> pendingOutbox(Duration minAge, int limit) {
        check("pendingOutbox(" + minAge + ", " + limit + ")");
        Instant now = clock.instant();
        List<Row> taken = rows.values().stream()
                .filter(r -> !r.dispatched && !r.createdAt.plus(minAge).isAfter(now) && !r.heldUntil.isAfter(now))
                .sorted(Comparator.comparing((Row r) -> r.createdAt)).limit(limit).toList();
        List<OutboxEntry> entries = new ArrayList<>();
        for (Row r : taken) {
            r.heldUntil = now.plus(hold);
            entries.add(r.entry);
        }
        return entries;
    }

    @Override
    public synchronized void outboxDispatched(List<OutboxEntry> entries) {
        check("outboxDispatched(" + entries.size() + ")");
        for (OutboxEntry e : entries) {
            Row r = rows.get(e.messageId());
            if (r != null) {
                r.dispatched = true;
            }
        }
    }

    @Override
    public synchronized void outboxFailed(OutboxEntry entry, String error) {
        check("outboxFailed(" + entry.messageId() + ")");
        Row r = rows.get(entry.messageId());
        if (r != null && !r.dispatched) {
            r.error = error;
            r.heldUntil = clock.instant().plus(hold);
        }
    }

    @Override
    public synchronized Status outboxStatus() {
        check("outboxStatus");
        long pending = 0;
        long failing = 0;
        Instant oldest = null;
        for (Row r : rows.values()) {
            if (!r.dispatched) {
                pending++;
                failing += r.error == null ? 0 : 1;
                oldest = oldest == null || r.createdAt.isBefore(oldest) ? r.createdAt : oldest;
            }
        }
        return new Status(pending, oldest, failing);
    }

    /** @return how many calls named this (for example {@code pendingOutbox(PT1M, 100)}) */
    long count(String call) {
        return calls.stream().filter(c -> c.equals(call)).count();
    }
}

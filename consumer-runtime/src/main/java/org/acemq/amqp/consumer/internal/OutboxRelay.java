package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.SendPath;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dispatches what handlers' transactions committed to the store's outbox, on a thread of its own, so that a handler
 * thread goes on (and its incoming message is accepted) as soon as its transaction committed, instead of waiting for
 * the broker to accept what it sent. Those messages are safe in the outbox from the commit on; the relay only makes
 * them go out soon.
 *
 * <p>One relay per consumer. Its thread takes what waits in its queue, up to {@value #MAX_PER_ROUND} entries at once,
 * and sends them together ({@link OutboxDispatcher}: each waited for until the broker settled it; what the broker does
 * not take stays pending, recorded and logged). It marks the accepted ones dispatched in one store call once the first
 * of them has waited {@code markDelay} or {@value #MARK_AT} wait, so that a mark (a commit) serves many messages
 * rather than adding a commit per round. A process that dies before a mark leaves those entries pending: the sweep
 * sends them again with the same ids, which an idempotent receiver absorbs.
 * <ul>
 *   <li>The queue holds at most {@value #MAX_QUEUED} entries. A handler thread that finds it full waits for room, at
 *       most {@code maxWait} (the connection's request timeout); then its entries are left to the outbox sweep. So a
 *       slow broker slows the handlers instead of filling memory, and nothing is lost either way.</li>
 *   <li>While the broker is disconnected what the relay takes is left in the outbox, untouched (not tried, nothing
 *       recorded against it): the sweep sends it once the consumer has reconnected.</li>
 *   <li>A mark that fails leaves the entries pending: the sweep sends them again, with the same ids.</li>
 *   <li>{@link #close} takes no more, sends what waits while the connection is up, until a deadline; what is left
 *       then stays in the outbox for the sweep of any consumer on the store.</li>
 * </ul>
 * Thread-safe.
 */
final class OutboxRelay {

    private static final Logger LOG = LoggerFactory.getLogger(OutboxRelay.class);
    /** The most entries waiting in the queue. */
    static final int MAX_QUEUED = 10_000;
    /** The most entries one round sends. */
    static final int MAX_PER_ROUND = 500;
    /** Accepted entries are marked dispatched once this many wait for their mark (or their mark delay is over). */
    static final int MARK_AT = 1_000;

    private record Item(OutboxEntry entry, Outbound message, String who) {
    }

    private final String consumer;
    private final OutboxStore store;
    private final OutboxDispatcher dispatcher;
    private final BooleanSupplier connected;
    private final Duration maxWait;
    private final Duration markDelay;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final Condition room = lock.newCondition();
    private final Condition idle = lock.newCondition();
    /** Guarded by the lock. */
    private final ArrayDeque<Item> queue = new ArrayDeque<>();
    /** Whether a round is sending; guarded by the lock. */
    private boolean busy;
    /** No more entries are taken; guarded by the lock. */
    private boolean closing;
    /** The thread ends (the queue is left to the sweep); guarded by the lock. */
    private boolean stopped;
    /** The thread has ended (its last marks written); guarded by the lock. */
    private boolean ended;
    private Thread thread;
    /** Accepted, not marked yet; only the relay's thread touches it. */
    private final List<OutboxEntry> unmarked = new ArrayList<>();
    /** When {@link #unmarked} is to be marked, by {@link System#nanoTime()}; only the relay's thread touches it. */
    private long markDue;

    /**
     * @param consumer the consumer's name, for the thread's name and log lines
     * @param store the store's outbox (where accepted entries are marked dispatched)
     * @param dispatcher sends entries and records those not taken
     * @param connected whether the broker connection is up now
     * @param maxWait how long a handler thread waits for room in a full queue
     * @param markDelay how long accepted entries may wait for their mark, so that one mark serves many
     */
    OutboxRelay(String consumer, OutboxStore store, OutboxDispatcher dispatcher, BooleanSupplier connected,
                Duration maxWait, Duration markDelay) {
        this.consumer = consumer;
        this.store = store;
        this.dispatcher = dispatcher;
        this.connected = connected;
        this.maxWait = maxWait;
        this.markDelay = markDelay;
    }

    /** Starts the relay's thread. */
    void start() {
        Thread t = new Thread(this::loop, "acemq-" + consumer + "-outbox-relay");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    /**
     * Queues a committed transaction's outbox entries for dispatch; returns at once unless the queue is full.
     *
     * @param entries the entries, in the order the handler sent them
     * @param messages their messages, ready to send, in the same order
     * @param who whose entries they are, for log lines (for example {@code Subscription 'orders'})
     * @return whether they were queued (false: left to the outbox sweep)
     */
    boolean post(List<OutboxEntry> entries, List<Outbound> messages, String who) {
        if (entries.size() != messages.size()) {
            throw new IllegalArgumentException("entries and messages differ in number: " + entries.size() + " and "
                    + messages.size());
        }
        long deadline = System.nanoTime() + maxWait.toNanos();
        lock.lock();
        try {
            while (!closing && !queue.isEmpty() && queue.size() + entries.size() > MAX_QUEUED) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    LOG.warn("{}: the outbox relay has been {} messages behind the broker for {}; {} committed "
                            + "message(s) are left in the outbox for its sweep", who, queue.size(), maxWait,
                            entries.size());
                    return false;
                }
                try {
                    room.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            if (closing) {
                return false;
            }
            for (int i = 0; i < entries.size(); i++) {
                queue.addLast(new Item(entries.get(i), messages.get(i), who));
            }
            work.signal();
            return true;
        } finally {
            lock.unlock();
        }
    }

    private void loop() {
        try {
            while (true) {
                List<Item> round = take();
                if (round == null) {
                    return;
                }
                try {
                    if (!round.isEmpty()) {
                        send(round);
                    }
                    if (!unmarked.isEmpty() && (unmarked.size() >= MARK_AT || System.nanoTime() - markDue >= 0
                            || ending())) {
                        mark();
                    }
                } catch (RuntimeException | Error e) {
                    LOG.error("Consumer '{}': the outbox relay failed on {} message(s); they stay in the outbox for "
                            + "its sweep", consumer, round.size(), e);
                } finally {
                    lock.lock();
                    try {
                        busy = false;
                        idle.signalAll();
                    } finally {
                        lock.unlock();
                    }
                }
            }
        } finally {
            if (!unmarked.isEmpty()) {
                mark();
            }
            lock.lock();
            try {
                busy = false;
                ended = true;
                idle.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Waits for entries (or until the marks waiting are due) and takes a round.
     *
     * @return the round (empty when only marks are due), or null when the relay ends
     */
    private List<Item> take() {
        lock.lock();
        try {
            while (queue.isEmpty() && !closing && !stopped) {
                try {
                    if (unmarked.isEmpty()) {
                        work.await();
                    } else {
                        long left = markDue - System.nanoTime();
                        if (left <= 0) {
                            busy = true;
                            return List.of(); // the marks are due
                        }
                        work.awaitNanos(left);
                    }
                } catch (InterruptedException e) {
                    stopped = true;
                }
            }
            if (stopped || queue.isEmpty()) {
                return null;
            }
            int n = Math.min(queue.size(), MAX_PER_ROUND);
            List<Item> round = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                round.add(queue.pollFirst());
            }
            busy = true;
            room.signalAll();
            return round;
        } finally {
            lock.unlock();
        }
    }

    /** @return whether the relay is closing and nothing is left to send */
    private boolean ending() {
        lock.lock();
        try {
            return (closing || stopped) && queue.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /** One round: sends the entries, each subscription's together; the accepted ones wait for their mark. */
    private void send(List<Item> round) {
        if (!connected.getAsBoolean()) {
            LOG.debug("Consumer '{}': disconnected; {} committed message(s) wait in the outbox for its sweep", consumer,
                    round.size());
            return;
        }
        Map<String, List<Item>> byWho = new LinkedHashMap<>();
        for (Item item : round) {
            byWho.computeIfAbsent(item.who(), w -> new ArrayList<>()).add(item);
        }
        for (Map.Entry<String, List<Item>> e : byWho.entrySet()) {
            List<Item> items = e.getValue();
            List<OutboxEntry> entries = new ArrayList<>(items.size());
            List<Outbound> messages = new ArrayList<>(items.size());
            for (Item item : items) {
                entries.add(item.entry());
                messages.add(item.message());
            }
            List<OutboxEntry> accepted = dispatcher.dispatch(entries, messages, SendPath.OUTBOX, e.getKey());
            if (!accepted.isEmpty()) {
                if (unmarked.isEmpty()) {
                    markDue = System.nanoTime() + markDelay.toNanos();
                }
                unmarked.addAll(accepted);
            }
        }
    }

    /** Marks what was accepted since the last mark dispatched, in one store call. */
    private void mark() {
        List<OutboxEntry> entries = new ArrayList<>(unmarked);
        unmarked.clear();
        try {
            store.outboxDispatched(entries);
        } catch (RuntimeException e) {
            // they stay pending: the sweep sends them again, and the receivers absorb the copies by their ids
            LOG.warn("Consumer '{}': could not mark {} sent message(s) dispatched in the outbox ({}); the sweep sends "
                    + "them again", consumer, entries.size(), Errors.describe(e));
        }
    }

    /**
     * Takes no more entries and sends what waits (while the connection is up) until the deadline; then ends the
     * thread. What is left stays in the outbox for the sweep.
     *
     * @param deadline by {@link System#nanoTime()}
     * @return whether everything queued was sent (or left because the broker was disconnected) in time
     */
    boolean close(long deadline) {
        lock.lock();
        try {
            closing = true;
            work.signalAll();
            room.signalAll();
            while (thread != null && !ended) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    idle.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            boolean drained = queue.isEmpty() && !busy;
            if (!drained) {
                LOG.warn("Consumer '{}': the outbox relay had {} message(s) left to send at close; they stay in the "
                        + "outbox for its sweep", consumer, queue.size());
            }
            stopped = true;
            queue.clear();
            work.signalAll();
            return drained;
        } finally {
            lock.unlock();
        }
    }

    /** @return how many entries wait in the queue (for tests) */
    int queued() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }
}

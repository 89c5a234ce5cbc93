package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Repairs what a crash left in the store's transactional outbox: when the consumer connects ({@link #soon}) and then
 * every interval, on the consumer's {@link Scheduler} (never a handler thread, never protonj2's I/O thread), it takes
 * the oldest pending entries of at least the minimum age in batches ({@link OutboxStore#pendingOutbox(Duration, int)},
 * which holds them from other sweeps for the store's lease), sends them ({@link OutboxDispatcher}: what the broker
 * does not take stays pending, recorded and logged), marks the accepted ones dispatched in one call per batch, and
 * reads the outbox's status for health and meters ({@link OutboxState}).
 *
 * <ul>
 *   <li>While the broker is disconnected it only reads the status: the entries wait, untouched.</li>
 *   <li>While the store does not answer it does nothing but say so once (and once when it answers again); the last
 *       status read stays, its oldest age growing.</li>
 *   <li>One run at a time: a run that falls due while another runs (a reconnect during a long sweep) follows it at
 *       once. A run takes batches while they come back full, for at most one interval (and
 *       {@value #MAX_BATCHES_PER_RUN} batches); the rest waits for the next run.</li>
 *   <li>{@link #stop} keeps new runs from starting and ends a running one after its batch; {@link #awaitIdle} waits
 *       for that.</li>
 * </ul>
 */
final class OutboxSweep {

    private static final Logger LOG = LoggerFactory.getLogger(OutboxSweep.class);
    /** The most entries taken from the store at once. */
    static final int BATCH_SIZE = 100;
    /** The most batches one run takes, whatever the time. */
    static final int MAX_BATCHES_PER_RUN = 100;

    private final String who;
    private final OutboxStore store;
    private final OutboxDispatcher dispatcher;
    private final OutboxState state;
    private final Scheduler scheduler;
    private final Ticker ticker;
    private final BooleanSupplier connected;
    private final Duration interval;
    private final Duration minAge;

    private final Object lock = new Object();
    /** The run scheduled next, or null; guarded by the lock. */
    private Future<?> next;
    /** When {@link #next} is due, by the ticker; guarded by the lock. */
    private long nextDue;
    /** Identifies {@link #next}: a task of an older generation was replaced and does nothing. */
    private long generation;
    private boolean running;
    /** A run fell due while one ran: the next follows at once. */
    private boolean again;
    private volatile boolean stopped;
    /** Whether the last store call failed (logged once per outage). Only the running sweep touches it. */
    private boolean storeDown;

    /**
     * @param consumer the consumer's name, for log lines
     * @param dispatcher sends entries and records those not taken
     * @param state where the status read goes
     * @param connected whether the broker connection is up now
     * @param interval the time between runs
     * @param minAge the age an entry must have to be taken
     */
    OutboxSweep(String consumer, OutboxStore store, OutboxDispatcher dispatcher, OutboxState state,
                Scheduler scheduler, Ticker ticker, BooleanSupplier connected, Duration interval, Duration minAge) {
        this.who = "Outbox sweep of consumer '" + consumer + "'";
        this.store = store;
        this.dispatcher = dispatcher;
        this.state = state;
        this.scheduler = scheduler;
        this.ticker = ticker;
        this.connected = connected;
        this.interval = interval;
        this.minAge = minAge;
    }

    // ------------------------------------------------------------------ schedule

    /** Starts the periodic runs: the first one interval from now (or sooner, when the consumer connects). */
    void start() {
        schedule(interval.toNanos());
    }

    /** A run now (the consumer connected): unless one is already due as soon, or the sweep is stopped. */
    void soon() {
        schedule(0);
    }

    /** No more runs; a running one ends after its batch. */
    void stop() {
        synchronized (lock) {
            stopped = true;
            if (next != null) {
                next.cancel(false);
                next = null;
            }
        }
    }

    /**
     * Waits until no run is running (after {@link #stop}, a running one ends after its batch: at most the connection's
     * request timeout).
     *
     * @param deadline by {@link System#nanoTime()}
     * @return whether none runs
     */
    boolean awaitIdle(long deadline) {
        synchronized (lock) {
            while (running) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }
    }

    private void schedule(long delayNanos) {
        synchronized (lock) {
            if (stopped) {
                return;
            }
            long due = ticker.read() + delayNanos;
            if (next != null) {
                if (due - nextDue >= 0) {
                    return; // one is due as soon
                }
                next.cancel(false);
            }
            long mine = ++generation;
            try {
                next = scheduler.schedule(() -> fire(mine), Duration.ofNanos(delayNanos));
                nextDue = due;
            } catch (RejectedExecutionException e) {
                next = null;
                LOG.debug("{}: not scheduled, the scheduler is shut down", who);
            }
        }
    }

    private void fire(long mine) {
        synchronized (lock) {
            if (stopped || mine != generation) {
                return; // replaced by a sooner run, or stopped
            }
            next = null;
            if (running) {
                again = true;
                return;
            }
            running = true;
        }
        boolean followAtOnce;
        try {
            run();
        } catch (RuntimeException | Error e) {
            LOG.error("{}: the run failed; the next one runs in {}", who, interval, e);
        } finally {
            synchronized (lock) {
                running = false;
                followAtOnce = again;
                again = false;
                lock.notifyAll();
            }
        }
        schedule(followAtOnce ? 0 : interval.toNanos());
    }

    // ------------------------------------------------------------------ one run

    /** One run: dispatches what waits (when connected), then reads the status. */
    private void run() {
        if (connected.getAsBoolean()) {
            dispatchPending();
        }
        if (stopped) {
            return;
        }
        try {
            long mark = state.mark();
            state.read(store.outboxStatus(), mark);
            storeAnswered();
        } catch (RuntimeException e) {
            storeFailed("read the outbox's status", e);
        }
    }

    private void dispatchPending() {
        long began = ticker.read();
        int dispatched = 0;
        try {
            for (int batch = 0; batch < MAX_BATCHES_PER_RUN && !stopped && connected.getAsBoolean(); batch++) {
                List<OutboxEntry> entries;
                try {
                    entries = store.pendingOutbox(minAge, BATCH_SIZE);
                    storeAnswered();
                } catch (RuntimeException e) {
                    storeFailed("read the outbox", e);
                    return;
                }
                if (entries.isEmpty()) {
                    return;
                }
                List<OutboxEntry> accepted = dispatcher.dispatch(entries, null, SendPath.SWEEP, who);
                if (!accepted.isEmpty()) {
                    try {
                        store.outboxDispatched(accepted);
                        dispatched += accepted.size();
                    } catch (RuntimeException e) {
                        LOG.warn("{}: {} message(s) were sent, but could not be marked dispatched ({}); they stay "
                                + "pending and go out again later with the same ids, which receivers absorb", who,
                                accepted.size(), Errors.describe(e));
                    }
                }
                if (entries.size() < BATCH_SIZE || ticker.read() - began >= interval.toNanos()) {
                    return;
                }
            }
        } finally {
            if (dispatched > 0) {
                LOG.info("{}: dispatched {} message(s) that had waited in the outbox", who, dispatched);
            }
        }
    }

    private void storeFailed(String what, RuntimeException e) {
        if (!storeDown) {
            storeDown = true;
            LOG.warn("{}: could not {} ({}); the messages wait in it, nothing is lost; the sweep tries again every {}",
                    who, what, Errors.describe(e), interval);
        } else {
            LOG.debug("{}: could not {} ({})", who, what, Errors.describe(e));
        }
    }

    private void storeAnswered() {
        if (storeDown) {
            storeDown = false;
            LOG.info("{}: the store answers again", who);
        }
    }
}

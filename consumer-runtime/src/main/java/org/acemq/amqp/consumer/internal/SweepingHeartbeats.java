package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The runtime's own {@link HeartbeatScheduler}: one periodic sweep over the registered heartbeats instead of one
 * scheduler entry per delivery. Registering and cancelling a heartbeat is a set insert and a set remove; no
 * scheduler queue and no scheduler thread is touched on the per-delivery path (a scheduler entry per delivery cost
 * a heap insert, a heap removal and often a scheduler-thread wake-up for every message).
 *
 * <p>A heartbeat runs at most one sweep interval after it is due. The interval is at most a tenth of the shortest
 * heartbeat period registered so far (so a renewal is at most 10% late), and never above 100 ms.
 */
final class SweepingHeartbeats implements HeartbeatScheduler {

    private static final Logger LOG = LoggerFactory.getLogger(SweepingHeartbeats.class);
    private static final long MAX_SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long MIN_SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final ScheduledExecutorService scheduler;
    private final Set<Beat> beats = ConcurrentHashMap.newKeySet();
    private long sweepNanos;              // guarded by this
    private ScheduledFuture<?> sweeper;   // guarded by this

    SweepingHeartbeats(ScheduledExecutorService scheduler) {
        this.scheduler = scheduler;
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable beat, Duration period) {
        long periodNanos = Math.max(1, period.toNanos());
        ensureSweep(Math.max(MIN_SWEEP_NANOS, Math.min(MAX_SWEEP_NANOS, periodNanos / 10)));
        Beat b = new Beat(beat, periodNanos);
        beats.add(b);
        return b;
    }

    private synchronized void ensureSweep(long wanted) {
        if (sweeper != null && sweepNanos <= wanted) {
            return;
        }
        if (sweeper != null) {
            sweeper.cancel(false);
        }
        sweepNanos = wanted;
        sweeper = scheduler.scheduleWithFixedDelay(this::sweep, wanted, wanted, TimeUnit.NANOSECONDS);
    }

    private void sweep() {
        long now = System.nanoTime();
        for (Beat b : beats) {
            if (!b.cancelled && now - b.due >= 0) {
                b.due = now + b.period;
                try {
                    b.task.run();
                } catch (RuntimeException e) {
                    // the beat ends itself by throwing (lease lost, or the handler returned)
                    b.cancel(false);
                    if (!(e instanceof java.util.concurrent.CancellationException)) {
                        LOG.debug("Lease heartbeat ended: {}", Errors.describe(e));
                    }
                }
            }
        }
    }

    /** @return the time between sweeps */
    synchronized Duration sweepInterval() {
        return Duration.ofNanos(sweepNanos);
    }

    /** @return heartbeats registered and not yet ended */
    int size() {
        return beats.size();
    }

    /** One registered heartbeat; also its own handle. */
    private final class Beat implements ScheduledFuture<Object> {
        final Runnable task;
        final long period;
        volatile long due;
        volatile boolean cancelled;

        Beat(Runnable task, long period) {
            this.task = task;
            this.period = period;
            this.due = System.nanoTime() + period;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            if (cancelled) {
                return false;
            }
            cancelled = true;
            beats.remove(this);
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return cancelled;
        }

        @Override
        public Object get() {
            throw new UnsupportedOperationException("a heartbeat has no result");
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            throw new UnsupportedOperationException("a heartbeat has no result");
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
        }
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renews the lease of every claim whose handler is running, that waits admitted for a handler thread, or whose handler
 * has returned and whose confirm or release is not recorded yet, every lease/3 from the claim. One periodic sweep over the handler threads' slots and the intake's waiting deliveries: nothing is
 * registered or removed per delivery (a delivery's claim and its next renewal time sit in the delivery). A renewal runs
 * at most one sweep interval late: a tenth of the renewal period, never more than 100 ms.
 */
final class LeaseHeartbeats {

    private static final Logger LOG = LoggerFactory.getLogger(LeaseHeartbeats.class);
    private static final long MAX_SWEEP_NANOS = Duration.ofMillis(100).toNanos();

    private final StoreAccess store;
    private final Scheduler scheduler;
    private final Ticker ticker;
    private final long periodNanos;
    private final Duration sweep;
    private final List<Pipeline> watched = new CopyOnWriteArrayList<>();
    private volatile boolean stopped;

    /**
     * @param lease the store's lease
     */
    LeaseHeartbeats(StoreAccess store, Scheduler scheduler, Ticker ticker, Duration lease) {
        this.store = store;
        this.scheduler = scheduler;
        this.ticker = ticker;
        this.periodNanos = Math.max(1, lease.toNanos() / 3);
        this.sweep = Duration.ofNanos(Math.max(Duration.ofMillis(1).toNanos(),
                Math.min(MAX_SWEEP_NANOS, periodNanos / 10)));
    }

    /** @return the time between renewals of one lease */
    long periodNanos() {
        return periodNanos;
    }

    /** @return the time between sweeps */
    Duration sweepInterval() {
        return sweep;
    }

    void watch(Pipeline pipeline) {
        watched.add(pipeline);
    }

    void start() {
        next();
    }

    void stop() {
        stopped = true;
    }

    private void next() {
        if (stopped) {
            return;
        }
        try {
            scheduler.schedule(this::sweep, sweep);
        } catch (RejectedExecutionException e) {
            stopped = true;
        }
    }

    private void sweep() {
        try {
            long now = ticker.read();
            for (Pipeline pipeline : watched) {
                pipeline.forEachHeld(d -> beat(d, now));
            }
        } finally {
            next();
        }
    }

    private void beat(Delivery d, long now) {
        Claim claim = d.claim;
        long due = d.nextBeatNanos;
        if (claim == null || due == 0 || now - due < 0) {
            return;
        }
        d.nextBeatNanos = now + periodNanos;
        boolean kept;
        try {
            kept = store.renew(claim);
        } catch (RuntimeException e) {
            // Not fatal: the handler goes on, the next beat tries again, and confirm records completion anyway.
            LOG.debug("Lease renewal of {} failed: {}", LogSafe.id(claim.messageId()), Errors.describe(e));
            return;
        }
        if (!kept && d.claim == claim && d.nextBeatNanos != 0) {
            d.nextBeatNanos = 0;
            if (d.verdict == null) {
                // not once the handler has returned: its confirm (or a transactional handler's own) may have ended
                // the lease; a confirm that finds it taken over says so itself
                LOG.warn("Lease on {} was lost before its handler finished", LogSafe.id(claim.messageId()));
            }
        }
    }
}

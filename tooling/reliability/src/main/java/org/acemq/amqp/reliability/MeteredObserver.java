package org.acemq.amqp.reliability;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * Passes every event to a metrics observer (the consumer's {@code MicrometerObserver}); the harness consumer extends
 * it to add its own reaction to a settlement (crash points, the rejection record).
 */
class MeteredObserver implements ConsumerObserver {

    private final ConsumerObserver meters;

    MeteredObserver(ConsumerObserver meters) {
        this.meters = meters;
    }

    /** Marks a delivery reported accepted while the connection was down, for the soak's verdict to count. */
    static final String ACCEPTED_WHILE_DOWN = "SOAK-CHECK accepted while the connection was down";

    /**
     * An accept reported within this long after protonj2's interruption event may have been handed to the engine just
     * before it failed (the event comes on another thread, a little later); the bug this guards against showed
     * accepts 137 ms to 3 s after the loss, from handlers started after it.
     */
    private static final long GRACE_NANOS = 50_000_000L;

    /**
     * How long after the connection is back an outage's late accepts are weighed against the dispositions reported
     * dropped: the runtime learns that the I/O thread dropped a disposition when protonj2 fails it, which on a loaded
     * machine can come after the reconnect.
     */
    private static final long SETTLE_CHECK_DELAY_MS = 2_000;

    private volatile long downSince; // System.nanoTime() of the interruption event, 0 while connected
    /** Keys reported accepted later than the grace into the current outage; checked after the connection is back. */
    private List<String> lateAccepts = new ArrayList<>(); // guarded by this
    /** Dispositions the runtime reported dropped, over the consumer's life (only a failing one drops). */
    private long dropped; // guarded by this
    /** {@link #dropped} when the current (or last) outage began. */
    private long droppedAtOutageStart; // guarded by this
    private final java.util.concurrent.ScheduledExecutorService checks =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "soak-accept-check");
                t.setDaemon(true);
                return t;
            });

    @Override
    public void claim(String subscription, ClaimResult result) {
        meters.claim(subscription, result);
    }

    @Override
    public void claimFailed(String subscription) {
        meters.claimFailed(subscription);
    }

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        meters.settled(subscription, outcome, reason);
    }

    @Override
    public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        long since = downSince;
        if (outcome == Outcome.ACCEPTED && since != 0 && System.nanoTime() - since > GRACE_NANOS) {
            // between protonj2's interruption and reconnection nothing can be settled: an accept here went nowhere.
            // Fine if the runtime also reports it dropped (it was handed over while its link still looked live, and
            // the I/O thread dropped it: on a loaded machine the runtime can learn of the loss later than this
            // observer); a violation if not, which is what an accept on a dead delivery looks like
            synchronized (this) {
                lateAccepts.add(messageKey);
            }
        }
        meters.settled(subscription, messageKey, outcome, reason);
    }

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        meters.conflict(subscription, messageKey, recordedFingerprint, fingerprint);
    }

    @Override
    public void abandoned(String subscription) {
        meters.abandoned(subscription);
    }

    @Override
    public void dispositionDropped(String subscription) {
        synchronized (this) {
            dropped++;
        }
        meters.dispositionDropped(subscription);
    }

    @Override
    public void handled(String subscription, long nanos, boolean success) {
        meters.handled(subscription, nanos, success);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, String address, Map<String, Object> properties) {
        return meters.handlerStarting(subscription, address, properties);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        return meters.handlerStarting(subscription, envelope, brokerProduct);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success) {
        meters.storeCall(operation, nanos, success);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        meters.storeCall(operation, nanos, success, keys);
    }

    @Override
    public void storeBypassed(String subscription) {
        meters.storeBypassed(subscription);
    }

    @Override
    public void paused(boolean paused) {
        meters.paused(paused);
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        synchronized (this) {
            if (interrupted) {
                droppedAtOutageStart = dropped;
            } else {
                // weighed a little later, when the drops of this outage have been reported
                List<String> late = lateAccepts;
                long since = droppedAtOutageStart;
                lateAccepts = new ArrayList<>();
                if (!late.isEmpty()) {
                    checks.schedule(() -> check(late, since), SETTLE_CHECK_DELAY_MS,
                            java.util.concurrent.TimeUnit.MILLISECONDS);
                }
            }
            downSince = interrupted ? Math.max(1, System.nanoTime()) : 0;
        }
        meters.connectionInterrupted(interrupted);
    }

    /**
     * Accepts reported late into an outage beyond the dispositions reported dropped from its start until now went
     * nowhere unnoticed: each is printed as a violation.
     */
    private void check(List<String> late, long droppedAtStart) {
        long droppedInOutage;
        synchronized (this) {
            droppedInOutage = dropped - droppedAtStart;
        }
        for (int i = 0; i < late.size() - droppedInOutage; i++) {
            System.err.println(ACCEPTED_WHILE_DOWN + ": " + late.get(i) + " (" + late.size()
                    + " accepted late in the outage, " + droppedInOutage + " reported dropped)");
        }
    }
}

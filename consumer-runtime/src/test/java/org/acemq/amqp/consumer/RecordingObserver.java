package org.acemq.amqp.consumer;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

/** An observer that records what the runtime reports, for assertions. */
final class RecordingObserver implements ConsumerObserver {

    record Settled(String subscription, Outcome outcome, SettleReason reason) {
    }

    final List<Settled> settled = new CopyOnWriteArrayList<>();
    /** The message key of each entry of {@link #settled}, at the same index. */
    private final List<String> settledKeys = new java.util.ArrayList<>();
    final List<ClaimResult> claims = new CopyOnWriteArrayList<>();
    final AtomicInteger claimFailures = new AtomicInteger();
    final AtomicInteger abandoned = new AtomicInteger();
    final AtomicInteger interruptions = new AtomicInteger();
    final List<Boolean> pauses = new CopyOnWriteArrayList<>();
    final AtomicInteger renewals = new AtomicInteger();
    /** The outcome each handler's scope was closed with ("none" when it closed with none). */
    final List<String> scopes = new CopyOnWriteArrayList<>();

    @Override
    public HandlerScope handlerStarting(String subscription, String address, java.util.Map<String, Object> properties) {
        return outcome -> scopes.add(outcome == null ? "none" : outcome.name());
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success) {
        if (operation == StoreOperation.RENEW) {
            renewals.incrementAndGet();
        }
    }

    @Override
    public void claim(String subscription, ClaimResult result) {
        claims.add(result);
    }

    @Override
    public void claimFailed(String subscription) {
        claimFailures.incrementAndGet();
    }

    @Override
    public void settled(String subscription, String key, Outcome outcome, SettleReason reason) {
        synchronized (settledKeys) {
            settledKeys.add(key);
            settled.add(new Settled(subscription, outcome, reason));
        }
    }

    /** A conflict event: key, the fingerprint the store holds, the copy's. */
    record Conflict(String key, String recorded, String fingerprint) {
    }

    final List<Conflict> conflicts = new CopyOnWriteArrayList<>();

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        conflicts.add(new Conflict(messageKey, recordedFingerprint, fingerprint));
    }

    @Override
    public void abandoned(String subscription) {
        abandoned.incrementAndGet();
    }

    @Override
    public void paused(boolean paused) {
        pauses.add(paused);
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        if (interrupted) {
            interruptions.incrementAndGet();
        }
    }

    /** @return the keys settled with this outcome and reason, in the order settled */
    java.util.List<String> keys(Outcome outcome, SettleReason reason) {
        synchronized (settledKeys) {
            List<String> keys = new java.util.ArrayList<>();
            for (int i = 0; i < settled.size(); i++) {
                if (settled.get(i).outcome() == outcome && settled.get(i).reason() == reason) {
                    keys.add(settledKeys.get(i));
                }
            }
            return keys;
        }
    }

    long count(Outcome outcome, SettleReason reason) {
        return settled.stream().filter(s -> s.outcome() == outcome && s.reason() == reason).count();
    }
}

package org.acemq.amqp.samples;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * Counts what the runtime reports: settlements by reason, abandoned deliveries and lost connections. This is how an
 * application sees duplicates absorbed ({@link SettleReason#DUPLICATE}), retries ({@link SettleReason#FAILED}) and
 * dead-lettering ({@link SettleReason#POISON}) without touching message ids. Every callback is also passed on to a
 * second observer (the Micrometer binding with {@code --prometheus-port}, else {@link ConsumerObserver#NOOP}): a consumer
 * has one observer, so this one forwards. Thread-safe.
 */
final class DemoObserver implements ConsumerObserver {

    private final Map<SettleReason, LongAdder> settled = new EnumMap<>(SettleReason.class);
    private final LongAdder finallySettled = new LongAdder();
    private final LongAdder abandoned = new LongAdder();
    private final LongAdder interruptions = new LongAdder();
    private volatile long lastFinalNanos;
    private final ConsumerObserver next;

    DemoObserver() {
        this(ConsumerObserver.NOOP);
    }

    DemoObserver(ConsumerObserver next) {
        this.next = Objects.requireNonNull(next, "next");
        for (SettleReason r : SettleReason.values()) {
            settled.put(r, new LongAdder());
        }
    }

    @Override
    public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        count(outcome, reason);
        next.settled(subscription, messageKey, outcome, reason);
    }

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        count(outcome, reason);
        next.settled(subscription, outcome, reason);
    }

    private void count(Outcome outcome, SettleReason reason) {
        settled.get(reason).increment();
        if (outcome == Outcome.ACCEPTED || outcome == Outcome.REJECTED) {
            finallySettled.increment();
            lastFinalNanos = System.nanoTime();
        }
    }

    @Override
    public void abandoned(String subscription) {
        abandoned.increment();
        next.abandoned(subscription);
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        if (interrupted) {
            interruptions.increment();
        }
        next.connectionInterrupted(interrupted);
    }

    // ---- passed on only (DemoObserverTest checks that every ConsumerObserver method is passed on)

    @Override
    public void dispositionDropped(String subscription) {
        next.dispositionDropped(subscription);
    }

    @Override
    public void claim(String subscription, ClaimResult result) {
        next.claim(subscription, result);
    }

    @Override
    public void claimFailed(String subscription) {
        next.claimFailed(subscription);
    }

    @Override
    public void handled(String subscription, long nanos, boolean success) {
        next.handled(subscription, nanos, success);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, String address, Map<String, Object> applicationProperties) {
        return next.handlerStarting(subscription, address, applicationProperties);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        return next.handlerStarting(subscription, envelope, brokerProduct);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success) {
        next.storeCall(operation, nanos, success);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        next.storeCall(operation, nanos, success, keys);
    }

    @Override
    public void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
        next.conflict(subscription, messageKey, recordedFingerprint, fingerprint);
    }

    @Override
    public void storeBypassed(String subscription) {
        next.storeBypassed(subscription);
    }

    @Override
    public void paused(boolean paused) {
        next.paused(paused);
    }

    @Override
    public void sent(SendPath path, SendResult result, long nanos) {
        next.sent(path, result, nanos);
    }

    long settled(SettleReason reason) {
        return settled.get(reason).sum();
    }

    /** @return deliveries settled for good: accepted (processed or duplicate) or rejected (dead-lettered) */
    long finallySettled() {
        return finallySettled.sum();
    }

    /** @return {@link System#nanoTime()} of the last final settlement, 0 if none */
    long lastFinalNanos() {
        return lastFinalNanos;
    }

    long abandoned() {
        return abandoned.sum();
    }

    long interruptions() {
        return interruptions.sum();
    }
}

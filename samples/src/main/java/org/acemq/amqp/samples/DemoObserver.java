package org.acemq.amqp.samples;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

/**
 * Counts what the runtime reports: settlements by reason, abandoned deliveries and lost connections. This is how an
 * application sees duplicates absorbed ({@link SettleReason#DUPLICATE}), retries ({@link SettleReason#FAILED}) and
 * dead-lettering ({@link SettleReason#POISON}) without touching message ids. Thread-safe.
 */
final class DemoObserver implements ConsumerObserver {

    private final Map<SettleReason, LongAdder> settled = new EnumMap<>(SettleReason.class);
    private final LongAdder finallySettled = new LongAdder();
    private final LongAdder abandoned = new LongAdder();
    private final LongAdder interruptions = new LongAdder();
    private volatile long lastFinalNanos;

    DemoObserver() {
        for (SettleReason r : SettleReason.values()) {
            settled.put(r, new LongAdder());
        }
    }

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        settled.get(reason).increment();
        if (outcome == Outcome.ACCEPTED || outcome == Outcome.REJECTED) {
            finallySettled.increment();
            lastFinalNanos = System.nanoTime();
        }
    }

    @Override
    public void abandoned(String subscription) {
        abandoned.increment();
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        if (interrupted) {
            interruptions.increment();
        }
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

package org.acemq.amqp.interop;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

/**
 * What a consumer reported through its public {@link ConsumerObserver}: settlements by outcome and reason,
 * abandoned deliveries, and connection interruptions (the same events the {@code acemq.consumer.connection.interruptions}
 * meter counts).
 *
 * <p><b>Threading:</b> thread-safe.
 */
final class Tally implements ConsumerObserver {

    private final Map<String, AtomicInteger> settled = new ConcurrentHashMap<>();
    private final AtomicInteger interruptions = new AtomicInteger();
    private final AtomicInteger reconnects = new AtomicInteger();
    private final AtomicInteger abandoned = new AtomicInteger();

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        settled.computeIfAbsent(key(outcome, reason), k -> new AtomicInteger()).incrementAndGet();
    }

    @Override
    public void abandoned(String subscription) {
        abandoned.incrementAndGet();
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        (interrupted ? interruptions : reconnects).incrementAndGet();
    }

    /** @return deliveries settled with this outcome for this reason */
    int settled(Outcome outcome, SettleReason reason) {
        AtomicInteger n = settled.get(key(outcome, reason));
        return n == null ? 0 : n.get();
    }

    /** @return times the connection was lost */
    int interruptions() {
        return interruptions.get();
    }

    /** @return deliveries left unsettled because their link or connection died */
    int abandoned() {
        return abandoned.get();
    }

    @Override
    public String toString() {
        return "settled " + new TreeMap<>(Map.copyOf(settled)) + ", abandoned " + abandoned.get()
                + ", connection interruptions " + interruptions.get() + ", reconnects " + reconnects.get();
    }

    private static String key(Outcome outcome, SettleReason reason) {
        return outcome + "/" + reason;
    }
}

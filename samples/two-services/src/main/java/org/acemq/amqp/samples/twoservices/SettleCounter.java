package org.acemq.amqp.samples.twoservices;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

/**
 * Counts one service's settlements by reason, and its accepted ones: how the demo sees copies absorbed
 * ({@link SettleReason#DUPLICATE}) and handler runs that committed ({@link SettleReason#PROCESSED}). Thread-safe.
 */
final class SettleCounter implements ConsumerObserver {

    private final Map<SettleReason, LongAdder> byReason = new EnumMap<>(SettleReason.class);
    private final LongAdder accepted = new LongAdder();

    SettleCounter() {
        for (SettleReason r : SettleReason.values()) {
            byReason.put(r, new LongAdder());
        }
    }

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        byReason.get(reason).increment();
        if (outcome == Outcome.ACCEPTED) {
            accepted.increment();
        }
    }

    /** @return settlements for that reason, whatever the outcome */
    long count(SettleReason reason) {
        return byReason.get(reason).sum();
    }

    /** @return deliveries settled {@code accepted} */
    long accepted() {
        return accepted.sum();
    }
}

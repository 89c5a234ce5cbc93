package org.acemq.amqp.consumer.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.Ticker;

/**
 * The default processing mode: admitted deliveries run one at a time each, oldest first, on whichever handler thread
 * is free; any delivery may run beside any other.
 */
final class ArrivalOrder extends Schedule {

    private final ArrayDeque<Delivery> ready = new ArrayDeque<>();

    ArrivalOrder(StopSignal stop, Ticker ticker) {
        super(stop, ticker);
    }

    @Override
    List<Delivery> poll(long now, boolean stopping) {
        Delivery d = ready.pollFirst();
        return d == null ? null : List.of(d);
    }

    @Override
    void offer(Delivery d) {
        ready.addLast(d);
    }

    @Override
    int waiting() {
        return ready.size();
    }

    @Override
    List<Delivery> removeAll() {
        List<Delivery> all = new ArrayList<>(ready);
        ready.clear();
        return all;
    }

    @Override
    void forEach(Consumer<Delivery> action) {
        ready.forEach(action);
    }
}

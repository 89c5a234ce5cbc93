package org.acemq.amqp.consumer.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.Ticker;

/**
 * The batch processing mode: admitted deliveries are handed out a batch at a time, oldest first: as soon as a whole
 * batch waits, or when the oldest waiting one has waited the batch time (then with what is there), or at once while
 * the subscription stops. The intake leader waits for the client only until the waiting batch is due, so a partial
 * batch is never held up by a quiet queue.
 */
final class Batches extends Schedule {

    private final ArrayDeque<Delivery> ready = new ArrayDeque<>();
    private final int size;
    private final long timeNanos;

    /**
     * @param size the most deliveries per batch
     * @param timeNanos how long the oldest waiting delivery waits for its batch to fill
     */
    Batches(StopSignal stop, Ticker ticker, int size, long timeNanos) {
        super(stop, ticker);
        this.size = size;
        this.timeNanos = timeNanos;
    }

    @Override
    List<Delivery> poll(long now, boolean stopping) {
        Delivery oldest = ready.peekFirst();
        if (oldest == null || (ready.size() < size && !stopping && dueIn(oldest, now) > 0)) {
            return null;
        }
        int n = Math.min(size, ready.size());
        List<Delivery> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            batch.add(ready.pollFirst());
        }
        return batch;
    }

    private long dueIn(Delivery oldest, long now) {
        return timeNanos - (now - oldest.arrival.receivedNanos());
    }

    @Override
    long waitNanos(long now) {
        Delivery oldest = ready.peekFirst();
        return oldest == null ? 0 : Math.max(1, dueIn(oldest, now));
    }

    @Override
    long leadNanos(long now) {
        Delivery oldest = ready.peekFirst();
        return oldest == null ? 0 : Math.max(1, dueIn(oldest, now));
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

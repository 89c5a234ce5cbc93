package org.acemq.amqp.consumer.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;

/**
 * The ordered processing mode: the deliveries of one ordering key run one at a time, in the order they arrived, and
 * deliveries of different keys side by side; a delivery without a key runs as in {@link ArrivalOrder}. The next work
 * is always the oldest delivery that may run: the head of a key nobody runs, or a keyless one.
 *
 * <p><b>A key stays taken</b> from the moment its delivery is handed to a thread until that delivery is finished
 * with, and through its retries in place (a transient failure is held for its back-off and run again, while the later
 * deliveries of its key wait; {@link OutcomePolicy} decides that).
 *
 * <p><b>A hot key cannot take all the credit.</b> At most {@code keyBacklog} deliveries of one key hold a place in
 * the subscription's window (received, waiting or running); a later one of a busy key gives its place back at once
 * (its slot is freed, so the broker may send other keys' messages) and waits <em>parked</em>. While
 * {@code parkedLimit} deliveries are parked, or the parked ones weigh {@code parkedBytes} or more (each its encoded
 * size plus {@link Subscription#PARKED_DELIVERY_OVERHEAD}), the intake takes no more from the client: what the broker
 * sent waits there, holding its credit, and none is granted until parked deliveries ran. So the memory held is at most
 * the window plus the parked bound (plus what one take from the client brings beyond it), and the credit accounting is
 * the one every subscription has. With nothing parked the intake always may take (a bound of 0 parks at most what one
 * take brings).
 */
final class KeyOrder extends Schedule {

    /** One ordering key's deliveries. */
    private static final class Key {
        /** The work a thread runs for this key now, or null; identifies that run. */
        List<Delivery> running;
        /** Admitted and not started, oldest first; the first may run once {@link #running} is null. */
        final ArrayDeque<Delivery> waiting = new ArrayDeque<>();
        /** Its deliveries that hold a place in the window (waiting or running). */
        int slotted;
    }

    private final Map<String, Key> keys = new HashMap<>();
    /** Deliveries that may run now, oldest first: keyless ones and the heads of idle keys. */
    private final ArrayDeque<Delivery> ready = new ArrayDeque<>();
    private final int keyBacklog;
    private final int parkedLimit;
    private final long parkedBytesLimit;
    private final Consumer<Delivery> giveBackSlot;
    private int waiting;
    private int parked;
    /** What the parked deliveries waiting weigh: {@link #weight} each. */
    private long parkedBytes;

    /**
     * @param keyBacklog how many deliveries of one key hold a place in the window
     * @param parkedLimit how many may be parked before the intake takes no more
     * @param parkedBytesLimit what parked deliveries may weigh before the intake takes no more
     * @param giveBackSlot frees a delivery's place in the window (its slot), for a parked one
     */
    KeyOrder(StopSignal stop, Ticker ticker, int keyBacklog, int parkedLimit, long parkedBytesLimit,
             Consumer<Delivery> giveBackSlot) {
        super(stop, ticker);
        this.keyBacklog = keyBacklog;
        this.parkedLimit = parkedLimit;
        this.parkedBytesLimit = parkedBytesLimit;
        this.giveBackSlot = giveBackSlot;
    }

    /** @return what a parked delivery counts against the byte bound: its encoded size plus the fixed overhead */
    static long weight(Delivery d) {
        return (long) d.arrival.encodedSize() + Subscription.PARKED_DELIVERY_OVERHEAD;
    }

    @Override
    List<Delivery> poll(long now, boolean stopping) {
        Delivery d = ready.pollFirst();
        if (d == null) {
            return null;
        }
        waiting--;
        if (d.parked) {
            parked--;
            parkedBytes -= weight(d);
        }
        List<Delivery> work = List.of(d);
        String k = d.arrival.orderKey();
        if (k != null) {
            Key key = keys.get(k);
            key.waiting.pollFirst();
            key.running = work;
        }
        return work;
    }

    @Override
    void offer(Delivery d) {
        waiting++;
        String k = d.arrival.orderKey();
        if (k == null) {
            ready.addLast(d);
            return;
        }
        Key key = keys.computeIfAbsent(k, x -> new Key());
        if (key.slotted < keyBacklog) {
            key.slotted++;
        } else {
            d.parked = true;
            parked++;
            parkedBytes += weight(d);
            giveBackSlot.accept(d);
        }
        key.waiting.addLast(d);
        if (key.running == null && key.waiting.size() == 1) {
            ready.addLast(d);
        }
    }

    @Override
    void offerAgain(Delivery d) {
        Key key = keys.get(d.arrival.orderKey());
        if (key == null) { // keyless: retried as any other
            offer(d);
            return;
        }
        waiting++;
        if (d.parked) {
            parked++;
            parkedBytes += weight(d);
        }
        key.running = null; // it takes its key again when it is handed out
        key.waiting.addFirst(d);
        ready.addFirst(d);
    }

    @Override
    void finished(List<Delivery> work) {
        for (Delivery d : work) {
            String k = d.arrival.orderKey();
            Key key = k == null ? null : keys.get(k);
            if (key == null || key.running != work || d.retryPending) {
                continue; // keyless; or run again meanwhile; or its retry holds the key
            }
            key.running = null;
            if (!d.parked) {
                key.slotted--;
            }
            Delivery next = key.waiting.peekFirst();
            if (next != null) {
                ready.addLast(next);
            } else {
                keys.remove(k);
            }
        }
    }

    @Override
    boolean tracksFinished() {
        return true;
    }

    @Override
    boolean mayTake() {
        return parked == 0 || (parked < parkedLimit && parkedBytes < parkedBytesLimit);
    }

    @Override
    int waiting() {
        return waiting;
    }

    @Override
    List<Delivery> removeAll() {
        List<Delivery> all = new ArrayList<>(waiting);
        forEach(all::add);
        keys.clear();
        ready.clear();
        waiting = 0;
        parked = 0;
        parkedBytes = 0;
        return all;
    }

    @Override
    void forEach(Consumer<Delivery> action) {
        for (Delivery d : ready) {
            if (d.arrival.orderKey() == null) {
                action.accept(d);
            }
        }
        for (Key key : keys.values()) {
            key.waiting.forEach(action);
        }
    }
}

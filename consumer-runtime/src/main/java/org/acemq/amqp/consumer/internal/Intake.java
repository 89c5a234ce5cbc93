package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.Ticker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a subscription's handler threads get their deliveries: leader/follower, no thread of its own and no timer. A
 * thread that needs work takes the oldest admitted delivery that waits (claimed, not started). If none waits and no
 * other thread is taking deliveries from the client, it becomes the <em>leader</em>: it waits in {@code receive()} for
 * one delivery, takes what else the client has queued ({@code tryReceive()}, up to a bound), has them all read and
 * claimed in one store call ({@link Admission#admit}), keeps the first for itself and leaves the rest to the
 * other threads. Meanwhile the others wait; deliveries that arrive during the leader's store call form the next batch.
 * A lone delivery therefore pays exactly one claim round trip and waits for nothing; a busy subscription claims many per
 * call.
 *
 * <p><b>How far ahead it claims.</b> An admitted delivery's lease runs while it waits for a thread. The intake claims
 * at most what the threads can start within {@link #HORIZON} (from a moving average of the handler's run time), but
 * never fewer than one per idle thread, and never more than the subscription's window ({@code concurrency +
 * prefetch}) or {@link #MAX_BATCH}. A waiting claim is renewed with the running ones by the lease heartbeat, and one
 * whose consumer closes or whose link dies before it starts is released (never accepted): see
 * {@link Runner#run}.
 */
final class Intake {

    /** Admitted deliveries should start within about this long. */
    static final Duration HORIZON = Duration.ofMillis(100);
    /** The most deliveries claimed in one store call. */
    static final int MAX_BATCH = 256;
    private static final Logger LOG = LoggerFactory.getLogger(Intake.class);
    private static final Delivery[] NONE = new Delivery[0];
    /**
     * For tests only (null otherwise): runs on the leader after a delivery left the client's queue and before its link
     * is decided, so that a test can put a connection loss exactly there.
     */
    static volatile Runnable afterReceive;

    /** Where the intake takes deliveries from: the subscription's link over time ({@link LinkKeeper}). */
    interface Source {

        /** @return the link to take from, waiting while there is none; null once the subscription stops */
        ReceiverLink awaitLink();

        /** @return whether nothing may be taken now (the consumer closes, or the application stopped it) */
        boolean quiet();

        /** @return whether the consumer closes */
        boolean stopping();

        /** A receive on {@code link} failed (the link or the connection ended). */
        void receiveFailed(ReceiverLink link, ClientException failure);

        /**
         * Counts a delivery taken from {@code from}'s receiver against the link that owns it.
         *
         * @return a new delivery in the pipeline, {@link Delivery.State#RECEIVED}
         */
        Delivery take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp, long receivedNanos);
    }

    private final String name;
    private final Source links;
    private final Admission admission;
    private final HandlerTimes times;
    private final Ticker ticker;
    private final int concurrency;
    private final int window;
    private final long horizonNanos;
    /**
     * Guards the fields below; idle threads wait on it. A monitor, not a {@code ReentrantLock}: an AQS lock or
     * condition may unpark a thread that has already moved on, and that stray permit would cut short the next
     * {@code LockSupport.park} of the application's handler on that thread.
     */
    private final Object lock = new Object();
    private final ArrayDeque<Delivery> ready = new ArrayDeque<>();
    private boolean leading;
    /** A leader holds deliveries taken from the client that are not in {@link #ready} nor running yet. */
    private volatile boolean admitting;
    private int idle;
    private volatile int readyCount;
    private volatile int idleCount;

    /**
     * @param links what to take from, and whether to take at all
     * @param times the handlers' run time (how far ahead to claim)
     * @param horizonNanos admitted deliveries should start within about this long ({@link #horizonNanos(long)})
     */
    Intake(String name, int concurrency, int prefetch, Source links, Admission admission, HandlerTimes times,
           Ticker ticker, long horizonNanos) {
        this.name = name;
        this.links = links;
        this.admission = admission;
        this.times = times;
        this.ticker = ticker;
        this.concurrency = concurrency;
        this.window = concurrency + prefetch;
        this.horizonNanos = horizonNanos;
    }

    /**
     * @param beatNanos the lease renewal period, 0 if leases are not renewed (or unknown)
     * @return how soon admitted deliveries should start: {@link #HORIZON}, or a quarter of the renewal period if less
     */
    static long horizonNanos(long beatNanos) {
        return beatNanos > 0 ? Math.min(HORIZON.toNanos(), beatNanos / 4) : HORIZON.toNanos();
    }

    /**
     * On a handler thread: the next admitted delivery to run, waiting for one (and leading the intake when nobody
     * does).
     *
     * @return the delivery, or null once the subscription stops and nothing admitted is left
     */
    Delivery next(HandlerSlot slot) {
        while (true) {
            synchronized (lock) {
                if (!awaitTurn()) {
                    Delivery d = ready.pollFirst();
                    if (d != null) {
                        readyCount = ready.size();
                        if (idle > 0 && (!ready.isEmpty() || !leading)) {
                            lock.notify(); // the next one takes the next delivery, or leads the intake
                        }
                        return d;
                    }
                    lock.notify(); // stopping: let the next waiter see it too
                    return null;
                }
                leading = true;
            }
            List<Delivery> admitted = List.of();
            try {
                admitted = lead(slot);
            } catch (RuntimeException | Error e) {
                LOG.error("Subscription '{}': taking deliveries failed", name, e);
            } finally {
                synchronized (lock) {
                    leading = false;
                    admitting = false;
                    for (int i = 1; i < admitted.size(); i++) {
                        ready.addLast(admitted.get(i));
                    }
                    readyCount = ready.size();
                    if (idle > 0) {
                        // One waiter: it takes a delivery and wakes the next while more wait, or leads the intake. A
                        // chain, not a crowd: with a fast handler the running threads take most of the batch
                        // themselves, and a thread woken for nothing costs a context switch.
                        lock.notify();
                    }
                }
            }
            if (!admitted.isEmpty()) {
                return admitted.get(0);
            }
        }
    }

    /**
     * Under the lock: waits until this thread can take an admitted delivery or lead the intake.
     *
     * @return true to lead; false to take the oldest admitted delivery (or, if none, to stop)
     */
    private boolean awaitTurn() {
        while (true) {
            if (!ready.isEmpty()) {
                return false;
            }
            if (!leading) {
                return !links.stopping();
            }
            idle++;
            idleCount = idle;
            try {
                lock.wait();
            } catch (InterruptedException e) {
                // only close() interrupts a waiting thread, after setting stopping: the loop sees it
            } finally {
                idle--;
                idleCount = idle;
            }
        }
    }

    /** Takes a batch from the client and admits it. @return the admitted deliveries to run, in order */
    private List<Delivery> lead(HandlerSlot slot) {
        ReceiverLink link = links.awaitLink();
        if (link == null) {
            return List.of();
        }
        org.apache.qpid.protonj2.client.Delivery amqp = null;
        ClientException failure = null;
        slot.receiving();
        try {
            if (!links.quiet()) {
                amqp = link.receiver.receive();
            }
        } catch (ClientException e) {
            failure = e;
        } catch (RuntimeException e) {
            failure = new ClientException(Errors.describe(e), e);
        } finally {
            slot.received();
        }
        Runnable probe = afterReceive;
        if (probe != null && amqp != null) {
            probe.run();
        }
        if (amqp == null) {
            if (failure != null && !links.quiet() && !(failure.getCause() instanceof InterruptedException)) {
                links.receiveFailed(link, failure);
            }
            return List.of();
        }
        admitting = true;
        int limit = limit();
        List<Delivery> batch = new ArrayList<>(Math.min(limit, 64));
        batch.add(take(link, amqp));
        try {
            while (batch.size() < limit && !links.quiet() && (amqp = link.receiver.tryReceive()) != null) {
                batch.add(take(link, amqp));
            }
        } catch (ClientException | RuntimeException e) {
            // the link is failing: the next receive() reports it; what was taken is admitted as usual
        }
        return admission.admit(batch);
    }

    /**
     * @return how many deliveries this intake may take: what the threads can start within the horizon (at least one
     *     per idle thread, the leader included), less what is admitted and waiting already
     */
    private int limit() {
        long avg = Math.max(1, times.averageNanos());
        long startable = Math.max(concurrency * horizonNanos / avg, idleCount + 1L);
        long room = Math.min(startable, window) - readyCount;
        return (int) Math.max(1, Math.min(room, MAX_BATCH));
    }

    /**
     * Counts a delivery taken from the client against the link it came on (no lock: one atomic update); also for the
     * deliveries {@link Leftovers} takes alone at shutdown.
     */
    Delivery take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        return links.take(from, amqp, ticker.read());
    }

    /** @return whether a leader is taking deliveries or admitted ones wait for a thread */
    boolean busy() {
        synchronized (lock) {
            return admitting || !ready.isEmpty();
        }
    }

    /** Wakes every thread waiting for a turn (the subscription stops). */
    void wakeAll() {
        synchronized (lock) {
            lock.notifyAll();
        }
    }

    /** @return the admitted deliveries waiting for a thread, removed (on close: the caller releases them) */
    List<Delivery> drain() {
        synchronized (lock) {
            List<Delivery> all = new ArrayList<>(ready);
            ready.clear();
            readyCount = 0;
            return all;
        }
    }

    /** Calls {@code action} for each admitted delivery waiting for a thread (a snapshot; for the lease heartbeat). */
    void forEachWaiting(Consumer<Delivery> action) {
        if (readyCount == 0) {
            return;
        }
        Delivery[] waiting;
        synchronized (lock) {
            waiting = ready.toArray(NONE);
        }
        for (Delivery d : waiting) {
            action.accept(d);
        }
    }
}

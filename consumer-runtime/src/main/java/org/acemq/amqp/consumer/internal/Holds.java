package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.acemq.amqp.consumer.Scheduler;

/**
 * Deliveries held before they are settled (the retry back-off of a transient failure, the in-progress delay). A held
 * delivery keeps its slot; the handler thread has moved on. Held deliveries are the exception, not the hot path.
 */
final class Holds {

    private final Scheduler scheduler;
    private final Set<Hold> holds = ConcurrentHashMap.newKeySet();

    private static final class Hold {
        final Delivery delivery;
        final Runnable settle;
        final AtomicBoolean done = new AtomicBoolean();
        volatile Future<?> future;

        Hold(Delivery delivery, Runnable settle) {
            this.delivery = delivery;
            this.settle = settle;
        }
    }

    Holds(Scheduler scheduler) {
        this.scheduler = scheduler;
    }

    /** Runs {@code settle} after {@code delay}, or at once if the scheduler is shut down. */
    void hold(Delivery delivery, Duration delay, Runnable settle) {
        Hold h = new Hold(delivery, settle);
        holds.add(h);
        try {
            h.future = scheduler.schedule(() -> run(h), delay);
        } catch (RejectedExecutionException e) {
            run(h);
        }
    }

    private void run(Hold h) {
        if (h.done.compareAndSet(false, true)) {
            holds.remove(h);
            h.settle.run();
        }
    }

    /**
     * Takes a delivery's hold back, if it has not run yet.
     *
     * @return true if the hold will not run; false if it ran or runs now (it settles the delivery), or none exists
     */
    boolean cancel(Delivery delivery) {
        for (Hold h : holds) {
            if (h.delivery == delivery && h.done.compareAndSet(false, true)) {
                holds.remove(h);
                Future<?> f = h.future;
                if (f != null) {
                    f.cancel(false);
                }
                return true;
            }
        }
        return false;
    }

    /** Settles every held delivery now (shutdown). */
    void settleAll() {
        List<Hold> all = new ArrayList<>(holds);
        for (Hold h : all) {
            Future<?> f = h.future;
            if (f != null) {
                f.cancel(false);
            }
            run(h);
        }
    }

    /**
     * @param now the ticker's time
     * @return how long the oldest held delivery has been held since it was received, in nanoseconds, 0 if none
     */
    long oldest(long now) {
        long oldest = 0;
        for (Hold h : holds) {
            oldest = Math.max(oldest, now - h.delivery.arrival.receivedNanos());
        }
        return oldest;
    }
}

package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A subscription's {@code concurrency} handler threads: each repeats its pipeline's step ({@link Pipeline#step})
 * until the subscription stops. Each thread has a {@link HandlerSlot}: what health and the lease heartbeat read, and
 * how a stop wakes the intake leader from {@code receive()}.
 */
final class HandlerThreads {

    private static final Logger LOG = LoggerFactory.getLogger(HandlerThreads.class);

    /** What a thread does, again and again, until it answers false. */
    interface Step {
        boolean step(HandlerSlot slot);
    }

    private final String name;
    private final Step step;
    private final Consumer<HandlerSlot> leftAtShutdown;
    private final boolean handlesLeftAtShutdown;
    private final HandlerSlot[] slots;
    private final CountDownLatch ended;

    /**
     * @param leftAtShutdown what a thread does with the deliveries left in the client before it stops, when it handles
     *     them ({@link OutcomePolicy#handlesLeftAtShutdown})
     * @param handlesLeftAtShutdown whether it does
     */
    HandlerThreads(String name, int concurrency, Step step, Consumer<HandlerSlot> leftAtShutdown,
                   boolean handlesLeftAtShutdown) {
        this.name = name;
        this.step = step;
        this.leftAtShutdown = leftAtShutdown;
        this.handlesLeftAtShutdown = handlesLeftAtShutdown;
        this.slots = new HandlerSlot[concurrency];
        this.ended = new CountDownLatch(concurrency);
        for (int i = 0; i < concurrency; i++) {
            slots[i] = new HandlerSlot();
        }
    }

    /**
     * Starts one loop per slot: on threads of its own (named {@code prefix + n}, not daemon: a handler that never
     * returns keeps the JVM alive, as documented), or as long-running tasks of the application's executor.
     *
     * @param executor the application's executor for handlers, or null
     */
    void start(String prefix, Executor executor) {
        for (int i = 0; i < slots.length; i++) {
            HandlerSlot slot = slots[i];
            Runnable loop = () -> {
                slot.thread = Thread.currentThread();
                try {
                    loop(slot);
                } finally {
                    if (executor != null) {
                        slot.thread = null; // the executor's thread goes on to other work: never interrupt it
                    }
                    ended.countDown();
                }
            };
            if (executor == null) {
                Thread t = new Thread(loop, prefix + (i + 1));
                t.setDaemon(false);
                slot.thread = t;
                t.start();
            } else {
                try {
                    executor.execute(loop);
                } catch (RejectedExecutionException e) {
                    ended.countDown();
                    throw new IllegalStateException("the handler executor of subscription '" + name
                            + "' refused handler loop " + (i + 1) + " of " + slots.length + ": it must run "
                            + slots.length + " long-running tasks at once (concurrency)", e);
                }
            }
        }
    }

    private void loop(HandlerSlot slot) {
        boolean more = true;
        while (more) {
            try {
                more = step.step(slot);
            } catch (RuntimeException | Error e) {
                LOG.error("Subscription '{}': a delivery could not be processed or settled", name, e);
            }
        }
        if (handlesLeftAtShutdown) {
            // at-most-once: the broker settled these when it sent them; they cannot go back, so they are handled
            leftAtShutdown.accept(slot);
        }
    }

    /** Wakes every thread blocked in {@code receive()}. */
    void wakeReceivers() {
        for (HandlerSlot slot : slots) {
            slot.wake();
        }
    }

    /** Calls {@code action} for every delivery a thread runs now. */
    void forEachRunning(Consumer<Delivery> action) {
        for (HandlerSlot slot : slots) {
            List<Delivery> work = slot.current;
            if (work != null) {
                work.forEach(action);
            }
        }
    }

    /**
     * Waits until no thread runs a delivery and the schedule is not busy (the subscription was stopped by the
     * application: nothing new is taken).
     *
     * @param busy whether admitted deliveries wait or a leader is admitting some
     * @return whether that happened before the deadline
     */
    boolean awaitIdle(long deadlineNanos, BooleanSupplier busy) {
        while (true) {
            boolean running = busy.getAsBoolean();
            for (HandlerSlot slot : slots) {
                running |= slot.current != null;
            }
            if (!running) {
                return true;
            }
            if (System.nanoTime() - deadlineNanos >= 0) {
                LOG.warn("Subscription '{}': handler(s) still running when it was stopped; their deliveries go back "
                        + "to the broker with the link", name);
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
        }
    }

    /** @return whether every thread ended before the deadline */
    boolean await(long deadlineNanos) {
        boolean done = false;
        try {
            done = ended.await(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!done) {
            LOG.warn("Subscription '{}': handler(s) still running at shutdown; their deliveries go back to the broker "
                    + "when the link closes (default outcome: released) and their claims lapse with the lease", name);
        }
        return done;
    }

    /** Interrupts the handlers still running after the shutdown timeout. */
    void interruptAll() {
        if (ended.getCount() == 0) {
            return;
        }
        for (HandlerSlot slot : slots) {
            Thread t = slot.thread;
            if (t != null && t.isAlive() && slot.current != null) {
                t.interrupt();
            }
        }
    }
}

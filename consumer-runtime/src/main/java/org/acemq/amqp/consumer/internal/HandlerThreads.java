package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A subscription's {@code concurrency} handler threads. Each takes its next delivery from the {@link Intake} (which one
 * of them leads at a time: it takes what the client has queued and has it claimed in one store call) and runs it
 * ({@link Runner#run}). Each thread has a {@link HandlerSlot}: what health and the lease heartbeat read,
 * and how {@code close()} wakes the intake leader from {@code receive()}.
 */
final class HandlerThreads {

    private static final Logger LOG = LoggerFactory.getLogger(HandlerThreads.class);

    private final String name;
    private final Intake intake;
    private final Runner runner;
    private final Leftovers leftovers;
    private final Completions ending;
    private final LinkKeeper links;
    private final boolean handlesLeftAtShutdown;
    private final HandlerSlot[] slots;
    private final CountDownLatch ended;

    /**
     * @param handlesLeftAtShutdown whether the threads handle the deliveries left in the client before they stop
     *     ({@link OutcomePolicy#handlesLeftAtShutdown})
     */
    HandlerThreads(String name, int concurrency, Intake intake, Runner runner, Leftovers leftovers,
                   Completions ending, LinkKeeper links, boolean handlesLeftAtShutdown) {
        this.name = name;
        this.intake = intake;
        this.runner = runner;
        this.leftovers = leftovers;
        this.ending = ending;
        this.links = links;
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
        Delivery d;
        while ((d = intake.next(slot)) != null) {
            slot.current = d;
            try {
                runner.run(d);
            } catch (RuntimeException | Error e) {
                LOG.error("Subscription '{}': a delivery could not be processed or settled", name, e);
            } finally {
                slot.current = null;
            }
        }
        if (handlesLeftAtShutdown) {
            // at-most-once: the broker settled these when it sent them; they cannot go back, so they are handled
            leftovers.drain(List.of(), links.currentLink(), slot);
        }
    }

    /**
     * On the closing thread: admitted deliveries no thread started, then what the client holds for {@code link}, go
     * through the shutdown stage ({@link Leftovers}).
     *
     * @param link the link whose queued deliveries are taken too, or null
     */
    void releaseLeft(ReceiverLink link) {
        leftovers.drain(intake.drain(), link, new HandlerSlot());
    }

    /** Wakes every thread blocked in {@code receive()} or waiting for a turn at the intake. */
    void wakeReceivers() {
        for (HandlerSlot slot : slots) {
            slot.wake();
        }
        intake.wakeAll();
    }

    /** Calls {@code action} for every delivery a thread runs, that waits admitted, or whose claim waits to be ended. */
    void forEachHeld(Consumer<Delivery> action) {
        for (HandlerSlot slot : slots) {
            Delivery d = slot.current;
            if (d != null) {
                action.accept(d);
            }
        }
        intake.forEachWaiting(action);
        ending.forEachEnding(action);
    }

    /**
     * Waits until no thread runs a delivery and none waits admitted or is being admitted (the subscription was
     * stopped by the application: nothing new is taken).
     *
     * @return whether that happened before the deadline
     */
    boolean awaitIdle(long deadlineNanos) {
        while (true) {
            boolean busy = intake.busy();
            for (HandlerSlot slot : slots) {
                busy |= slot.current != null;
            }
            if (!busy) {
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

    /** @return how long the oldest delivery a thread holds (running or admitted) has been held, in nanoseconds */
    long oldest(long now) {
        long[] oldest = {0};
        forEachHeld(d -> oldest[0] = Math.max(oldest[0], now - d.receivedNanos));
        return oldest[0];
    }

    /** @return how long the oldest claim held (running or admitted) has been held, in nanoseconds */
    long oldestClaim(long now) {
        long[] oldest = {0};
        forEachHeld(d -> {
            long claimed = d.claimedNanos;
            if (claimed != 0) {
                oldest[0] = Math.max(oldest[0], now - claimed);
            }
        });
        return oldest[0];
    }
}

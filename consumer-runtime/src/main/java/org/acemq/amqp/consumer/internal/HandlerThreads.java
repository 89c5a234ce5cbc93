package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.Ticker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A subscription's {@code concurrency} handler threads. Each takes its next delivery from the {@link Intake} (which one
 * of them leads at a time: it takes what the client has queued and has it claimed in one store call) and runs it
 * ({@link DeliveryProcessor#run}). Each thread has a {@link HandlerSlot}: what health and the lease heartbeat read,
 * and how {@code close()} wakes the intake leader from {@code receive()}.
 */
final class HandlerThreads {

    private static final Logger LOG = LoggerFactory.getLogger(HandlerThreads.class);

    private final Subscriber subscriber;
    private final DeliveryProcessor processor;
    private final Intake intake;
    private final HandlerSlot[] slots;
    private final Thread[] threads;

    HandlerThreads(Subscriber subscriber, DeliveryProcessor processor, Ticker ticker, long beatNanos) {
        this.subscriber = subscriber;
        this.processor = processor;
        this.intake = new Intake(subscriber, processor, ticker, beatNanos);
        int n = subscriber.spec.concurrency();
        this.slots = new HandlerSlot[n];
        this.threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            slots[i] = new HandlerSlot();
        }
    }

    HandlerSlot[] slots() {
        return slots;
    }

    void start(String prefix) {
        for (int i = 0; i < slots.length; i++) {
            HandlerSlot slot = slots[i];
            Thread t = new Thread(() -> loop(slot), prefix + (i + 1));
            t.setDaemon(false); // a handler that never returns keeps the JVM alive, as documented
            slot.thread = t;
            threads[i] = t;
            t.start();
        }
    }

    private void loop(HandlerSlot slot) {
        Delivery d;
        while ((d = intake.next(slot)) != null) {
            slot.current = d;
            try {
                processor.run(d);
            } catch (RuntimeException | Error e) {
                LOG.error("Subscription '{}': a delivery could not be processed or settled", subscriber.name, e);
            } finally {
                slot.current = null;
            }
        }
        if (processor.policy().handlesLeftAtShutdown()) {
            // at-most-once: the broker settled these when it sent them; they cannot go back, so they are handled
            handleQueued(slot);
        }
    }

    private void handle(HandlerSlot slot, ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        Delivery d = intake.take(from, amqp);
        slot.current = d;
        try {
            processor.process(d);
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': a delivery could not be processed or settled", subscriber.name, e);
        } finally {
            slot.current = null;
        }
    }

    private void handleQueued(HandlerSlot slot) {
        ReceiverLink link = subscriber.currentLink();
        if (link != null) {
            handleAll(slot, link);
        }
    }

    /**
     * On the closing thread: every delivery received and not started goes through the normal path while stopping, so
     * it is {@code released} (SHUTDOWN), and a TRANSACTIONAL release is enlisted and reported only after the discharge.
     */
    void releaseQueued(ReceiverLink link) {
        handleAll(new HandlerSlot(), link);
    }

    /** Takes and processes whatever the client has queued, without waiting for more. */
    private void handleAll(HandlerSlot slot, ReceiverLink link) {
        try {
            org.apache.qpid.protonj2.client.Delivery amqp;
            while ((amqp = link.receiver.tryReceive()) != null) {
                handle(slot, link, amqp);
            }
        } catch (ClientException e) {
            LOG.debug("Taking the deliveries left in '{}' failed: {}", subscriber.name, Errors.describe(e));
        }
    }

    /**
     * On the closing thread: admitted deliveries that no thread has started go back ({@code released}, SHUTDOWN) and
     * their claims are released, in one store call; at-most-once ones are left to the threads, which handle them.
     */
    void releaseWaiting() {
        processor.runAll(intake.drain());
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
        processor.forEachEnding(action);
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
                        + "to the broker with the link", subscriber.name);
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
        }
    }

    /** @return whether every thread ended before the deadline */
    boolean await(long deadlineNanos) {
        boolean done = true;
        for (Thread t : threads) {
            if (t == null) {
                continue;
            }
            long left = deadlineNanos - System.nanoTime();
            try {
                if (left > 0) {
                    t.join(Math.max(1, left / 1_000_000));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            done &= !t.isAlive();
        }
        if (!done) {
            LOG.warn("Subscription '{}': handler(s) still running at shutdown; their deliveries go back to the broker "
                    + "when the link closes (default outcome: released) and their claims lapse with the lease",
                    subscriber.name);
        }
        return done;
    }

    /** Interrupts the handlers still running after the shutdown timeout. */
    void interruptAll() {
        for (Thread t : threads) {
            if (t != null && t.isAlive()) {
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

package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Ticker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A subscription's {@code concurrency} handler threads. Each takes the next delivery from the receiver itself and
 * processes it: no queue and no hand-off between threads on the way (the client's I/O thread hands a delivery straight
 * to a thread waiting in {@code receive()}, as for a bare protonj2 receiver). Taking a delivery costs one atomic
 * update of its link's count, no lock. Each thread has a {@link HandlerSlot}: what health and the lease heartbeat read,
 * and how {@code close()} wakes it from {@code receive()}.
 */
final class HandlerThreads {

    private static final Logger LOG = LoggerFactory.getLogger(HandlerThreads.class);

    private final Subscriber subscriber;
    private final DeliveryProcessor processor;
    private final Ticker ticker;
    private final HandlerSlot[] slots;
    private final Thread[] threads;

    HandlerThreads(Subscriber subscriber, DeliveryProcessor processor, Ticker ticker) {
        this.subscriber = subscriber;
        this.processor = processor;
        this.ticker = ticker;
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
        while (true) {
            ReceiverLink link = subscriber.awaitLink();
            if (link == null) {
                break;
            }
            org.apache.qpid.protonj2.client.Delivery amqp = null;
            ClientException failure = null;
            slot.receiving();
            try {
                if (!subscriber.stopping()) {
                    amqp = link.receiver.receive();
                }
            } catch (ClientException e) {
                failure = e;
            } catch (RuntimeException e) {
                failure = new ClientException(Errors.describe(e), e);
            } finally {
                slot.received();
            }
            if (amqp != null) {
                handle(slot, link, amqp);
            } else if (failure != null && !subscriber.stopping()
                    && !(failure.getCause() instanceof InterruptedException)) {
                subscriber.receiveFailed(link, failure);
            }
        }
        if (subscriber.spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE) {
            // The broker settled these when it sent them: they cannot go back, so they are handled, not released.
            handleQueued(slot);
        }
    }

    private void handle(HandlerSlot slot, ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        Delivery d = take(from, amqp);
        slot.current = d;
        try {
            processor.process(d);
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': a delivery could not be processed or settled", subscriber.name, e);
        } finally {
            slot.current = null;
        }
    }

    /** Counts a delivery taken from the client against the link it came on (no lock: one atomic update). */
    private Delivery take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        ReceiverLink owner = subscriber.owner(from);
        boolean counted = owner.take();
        if (!counted) {
            subscriber.credit().lateTake(owner);
        }
        return new Delivery(amqp, owner, counted, ticker.read());
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

    /** Wakes every thread blocked in {@code receive()}, and only those. */
    void wakeReceivers() {
        for (HandlerSlot slot : slots) {
            slot.wake();
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

    /** @return how long the oldest delivery a thread holds has been held, in nanoseconds */
    long oldest(long now) {
        long oldest = 0;
        for (HandlerSlot slot : slots) {
            Delivery d = slot.current;
            if (d != null) {
                oldest = Math.max(oldest, now - d.receivedNanos);
            }
        }
        return oldest;
    }

    /** @return how long the oldest claim a thread holds has been held, in nanoseconds */
    long oldestClaim(long now) {
        long oldest = 0;
        for (HandlerSlot slot : slots) {
            Delivery d = slot.current;
            long claimed = d == null ? 0 : d.claimedNanos;
            if (claimed != 0) {
                oldest = Math.max(oldest, now - claimed);
            }
        }
        return oldest;
    }
}

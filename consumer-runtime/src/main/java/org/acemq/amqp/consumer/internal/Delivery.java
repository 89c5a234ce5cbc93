package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.api.Claim;
import org.apache.qpid.protonj2.client.Message;

/**
 * One delivery from the moment the intake takes it from the client until it is settled or abandoned. Its fields are
 * written by the thread that has it at the time (the intake leader, then the handler thread that runs it, then the
 * thread that ends its claim); each hand-over goes through a lock or a volatile write. {@code claim},
 * {@code claimedNanos} and {@code nextBeatNanos} are also read by the lease heartbeat and by health.
 *
 * <p>Where it is in the pipeline is its {@link State}; each stage moves it on with {@link #moveTo}, which refuses a
 * transition the pipeline does not have (a bug: it throws, and the delivery is settled as an unexpected failure).
 */
final class Delivery {

    /** Where a delivery is in the pipeline (docs/runtime.md). */
    enum State {
        /** Taken from the client by the intake; not read yet, or read and being claimed. */
        RECEIVED,
        /** Read and claimed (or to be claimed when a thread starts it): waits for a handler thread. */
        ADMITTED,
        /** A handler thread has it (its handler runs, or it is found stale and goes back). */
        RUNNING,
        /** Its verdict is known; its claim is being confirmed or released. */
        ENDING,
        /** Its outcome waits out a delay (retry back-off, in-progress delay) before it is sent. */
        HELD,
        /** Its outcome was sent, enlisted, or it was abandoned (its link was gone). Final. */
        SETTLED;

        private int allowedFrom;

        static {
            allow(ADMITTED, RECEIVED);
            allow(RUNNING, ADMITTED);
            allow(ENDING, RECEIVED, ADMITTED, RUNNING);
            allow(HELD, RECEIVED, ADMITTED, RUNNING, ENDING);
            allow(SETTLED, RECEIVED, ADMITTED, RUNNING, ENDING, HELD);
        }

        private static void allow(State to, State... from) {
            for (State f : from) {
                to.allowedFrom |= 1 << f.ordinal();
            }
        }

        /** @param from the state before @return whether a delivery may move from {@code from} to this state */
        boolean reachableFrom(State from) {
            return (allowedFrom & (1 << from.ordinal())) != 0;
        }
    }

    final org.apache.qpid.protonj2.client.Delivery amqp;
    final ReceiverLink link;
    /** Whether the delivery holds a slot of its link (false if it was taken after the link ended). */
    final boolean counted;
    final long receivedNanos;
    Message<?> message;
    String key;
    /** The content's fingerprint, or null when the subscription computes none. */
    String fingerprint;
    /** The fingerprint the store holds for the key, when it differs from {@link #fingerprint}; else null. */
    String recordedFingerprint;
    EnvelopeImpl envelope;
    DeliveryScope scope;
    /** What is known so far (the intake's decision, then the handler's result). */
    DeliveryFacts facts;
    /** Another delivery of the same intake batch has the same key: this one is claimed when a thread starts it. */
    boolean claimAtStart;
    /** The claim held, or null. */
    volatile Claim claim;
    /** When the claim was granted (ticker), 0 while none is held. */
    volatile long claimedNanos;
    /** When the claim's lease is next renewed (ticker), 0 for never. */
    volatile long nextBeatNanos;

    // ---- handed to Completions: the verdict whose claim is ended (confirm or release) before it is settled
    volatile Verdict verdict;
    /** The next delivery waiting for its claim to end (a stack, so that handing one over allocates nothing). */
    Delivery nextPending;
    /** Whether its outcome was sent, enlisted or scheduled (false: abandoned); valid once {@link #completed}. */
    boolean sent;
    /** Its claim was ended and it was settled (by whichever thread ended it). */
    volatile boolean completed;
    /** The handler thread waits for {@link #completed} (it has an observer scope to close with the outcome). */
    volatile boolean awaited;

    private boolean finished;
    private volatile State state = State.RECEIVED;

    Delivery(org.apache.qpid.protonj2.client.Delivery amqp, ReceiverLink link, boolean counted, long receivedNanos) {
        this.amqp = amqp;
        this.link = link;
        this.counted = counted;
        this.receivedNanos = receivedNanos;
    }

    /** @return where the delivery is in the pipeline */
    State state() {
        return state;
    }

    /**
     * Moves the delivery on; only the stage that owns a transition calls this.
     *
     * @param next the next state
     * @throws IllegalStateException if the pipeline has no such transition from the current state
     */
    void moveTo(State next) {
        State now = state;
        if (!next.reachableFrom(now)) {
            throw new IllegalStateException("delivery " + logId() + " cannot move from " + now + " to " + next);
        }
        state = next;
    }

    /**
     * Frees the delivery's slot, once: it is settled, abandoned, or its transaction ended.
     *
     * @param allocator the allocator of the link's member
     */
    void finish(CreditAllocator allocator) {
        synchronized (link.member.lock) {
            if (finished) {
                return;
            }
            finished = true;
            if (!counted) {
                return;
            }
            link.finished();
            allocator.released(link.member, 1);
        }
    }

    /** Marks the claim ended and the delivery settled, and wakes its handler thread if it waits for that. */
    void completed(boolean wasSent) {
        sent = wasSent;
        completed = true;
        if (awaited) {
            synchronized (this) {
                notifyAll();
            }
        }
    }

    /** On the handler thread: waits until {@link #completed}. */
    void awaitCompleted() {
        boolean interrupted = false;
        synchronized (this) {
            while (!completed) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** @return whether it can still be settled: its link is valid and the connection it came over alive */
    boolean live() {
        return link.live(amqp);
    }

    /** @return the key for log lines: escaped and shortened */
    String logId() {
        return LogSafe.id(key);
    }
}

package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.api.Claim;

/**
 * How far one delivery has come, from the moment it was read until it is settled or abandoned; what arrived is its
 * {@link Arrival}, which never changes. Its progress is written by the thread that has it at the time (the intake
 * leader, then the handler thread that runs it, then the thread that ends its claim); each hand-over goes through a
 * lock or a volatile write. {@code claim}, {@code claimedNanos} and {@code nextBeatNanos} are also read by the lease
 * heartbeat and by health.
 *
 * <p>Where it is in the pipeline is its {@link State}; each stage moves it on with {@link #moveTo}, which refuses a
 * transition the pipeline does not have (a bug: it throws, and the delivery is settled as an unexpected failure).
 */
final class Delivery {

    /** Where a delivery is in the pipeline (docs/runtime.md). */
    enum State {
        /** Taken from the client and read; being claimed. */
        RECEIVED,
        /** Read and claimed (or to be claimed when a thread starts it): waits for a handler thread. */
        ADMITTED,
        /** A handler thread has it (its handler runs, or it is found stale and goes back). */
        RUNNING,
        /** Its verdict is known; its claim is being confirmed or released. */
        ENDING,
        /** Its outcome waits out a delay (retry back-off, in-progress delay) before it is sent, or before it runs again. */
        HELD,
        /** Its outcome was sent, enlisted, or it was abandoned (its link was gone). Final. */
        SETTLED;

        private int allowedFrom;

        static {
            allow(ADMITTED, RECEIVED, HELD);
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

    /** What arrived. */
    final Arrival arrival;
    /** What is known so far (the read stage's facts, then the store's answer, then the handler's result). */
    DeliveryFacts facts;
    /** The fingerprint the store holds for the key, when it differs from the arrival's; else null. */
    String recordedFingerprint;
    /** The observer's scope and the trace context around its handler, while open. */
    DeliveryScope scope;
    /** Another delivery of the same intake batch has the same key: this one is claimed when a thread starts it. */
    boolean claimAtStart;
    /** It will run again in place (an ordered subscription's retry): its ordering key stays taken meanwhile. */
    volatile boolean retryPending;
    /** It holds no place in the window: an ordering key's delivery beyond the key's backlog. */
    boolean parked;
    /**
     * What its handler sent goes out in the AMQP transaction that accepts it (a {@code TRANSACTIONAL} subscription):
     * its claim is confirmed only once that transaction committed, and released if it did not.
     */
    boolean sendsInTransaction;
    /** The claim held, or null. */
    volatile Claim claim;
    /** When the claim was granted (ticker), 0 while none is held. */
    volatile long claimedNanos;
    /** When the claim's lease is next renewed (ticker), 0 for never. */
    volatile long nextBeatNanos;
    /** Outbox entries its handler (or, for a copy, an earlier run) sent that the broker took: marked with its confirm. */
    java.util.List<org.acemq.amqp.api.OutboxEntry> dispatched = java.util.List.of();

    // ---- handed to the end stage: the verdict whose claim is ended (confirm or release) before it is settled
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

    Delivery(Arrival arrival) {
        this.arrival = arrival;
    }

    /** @return the store key, or null */
    String key() {
        return arrival.key();
    }

    /** @return the handler's view of the message, or null if it has no key */
    EnvelopeImpl envelope() {
        return arrival.envelope();
    }

    /** @return the link that accounts for it */
    ReceiverLink link() {
        return arrival.link();
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
     * Its retry in place is due (an ordered subscription's transient failure): it goes back to the schedule, to be
     * claimed again and run, as after its arrival.
     */
    void again() {
        moveTo(State.ADMITTED);
        retryPending = false;
        verdict = null;
        completed = false;
        sent = false;
        awaited = false;
        claimAtStart = true;
        sendsInTransaction = false;
        dispatched = java.util.List.of();
        facts = DeliveryFacts.received(false, null, true, false, true);
    }

    /** Records the claim the store granted (the claim stage), and when its lease is next renewed (0: never). */
    void claimed(Claim granted, long nowNanos, long beatNanos) {
        claim = granted;
        claimedNanos = nowNanos;
        nextBeatNanos = beatNanos > 0 ? nowNanos + beatNanos : 0;
        arrival.envelope().attempt(granted.attempt());
    }

    /** The claim's end was recorded (or given up): it holds none any more. */
    void unclaimed() {
        claim = null;
        claimedNanos = 0;
    }

    /**
     * Frees the delivery's slot, once: it is settled, abandoned, or its transaction ended.
     *
     * @param allocator the allocator of the link's member
     */
    void finish(CreditAllocator allocator) {
        ReceiverLink link = arrival.link();
        synchronized (link.member.lock) {
            if (finished) {
                return;
            }
            finished = true;
            if (!arrival.counted()) {
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
        return arrival.link().live(arrival.amqp());
    }

    /** @return the key for log lines: escaped and shortened */
    String logId() {
        return LogSafe.id(arrival.key());
    }
}

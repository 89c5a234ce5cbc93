package org.acemq.amqp.consumer.internal;

import java.util.function.IntSupplier;

/**
 * One subscription's credit account in the {@link CreditAllocator}: its {@code outstanding} slots (credit the broker
 * may use, deliveries queued in the client, deliveries being handled) never exceed its window
 * ({@code concurrency + prefetch}), nor its share of a shared budget ({@code target}). Fields are guarded by
 * {@link #lock}; the allocator's {@code Member} says where its grants and drains go.
 */
abstract class CreditAccount {
    final String name;
    final int window;
    final Object lock;
    int outstanding;
    int target;
    boolean starting = true;
    boolean attached;
    boolean draining;
    boolean closed;
    /** Paused by the application: granted nothing until resumed. */
    boolean paused;
    IntSupplier inHand = () -> 0;

    CreditAccount(String name, int window, Object lock) {
        this.name = name;
        this.window = window;
        this.lock = lock;
    }

    /** Grants {@code credits} more credit on the account's link; under {@link #lock}, must not block. */
    abstract void grantOnLink(int credits);

    /** Takes the link's unused credit back (drains it); under {@link #lock}, must not block. */
    abstract void drainLink();

    /** @return slots in use (credit, queued, in hand); a snapshot */
    int outstanding() {
        synchronized (lock) {
            return outstanding;
        }
    }

    /** @return the share this member may hold; a snapshot */
    int target() {
        synchronized (lock) {
            return target;
        }
    }

    /** @return the most it may hold now: its window, or its share if smaller; under {@link #lock} */
    int cap() {
        return Math.min(window, target);
    }

    /** @return whether the link holds credit or queued deliveries that are not in hand; under {@link #lock} */
    boolean holdsUnused() {
        return outstanding - inHand.getAsInt() > 0;
    }

    /** Starts a drain of the link; under {@link #lock}. */
    void startDrain() {
        draining = true;
        drainLink();
    }

    @Override
    public String toString() {
        return name + "[outstanding=" + outstanding + ", target=" + target + ", window=" + window + "]";
    }
}

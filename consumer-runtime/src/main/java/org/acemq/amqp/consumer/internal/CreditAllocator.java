package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Link credit for the subscriptions of one connection: a small state machine with no protonj2 types. Each subscription
 * is a {@link Member}, a {@link CreditAccount} whose {@code outstanding} slots never exceed its window.
 *
 * <p><b>A shared budget</b> ({@code maxInFlightPerConnection > 0}) is split into fair shares ({@link CreditShares}).
 * Every event that frees capacity (a delivery finished, an aborted transfer, a drain answered, a link detached or
 * closed, a pause ended) re-evaluates every member, not only the one whose event it was (the QPID-8751 lesson): no
 * timer is needed. Where the broker answers drains per spec, the share of a member whose link is down is lent to the
 * others ({@link #lending}) and taken back by a drain when its link returns; where it does not (RabbitMQ 3.x), shares
 * are never lent, because lent credit could not be taken back from an idle link. With budget 0 (no cap) each member is
 * on its own and only its own lock is taken. Grants are batched (see {@link CreditShares}).
 *
 * <p><b>Threading:</b> every method may be called from any thread; the {@link Sink} is called under the allocator's
 * lock and must not block.
 */
final class CreditAllocator {

    /** Where grants and drains go; implementations must not block. */
    interface Sink {
        /** Grant {@code credits} more credit on the member's link. */
        void grant(Member member, int credits);

        /** Take the member's unused credit back (drain its link); answer with {@link #drained}. */
        void drain(Member member);
    }

    /** One subscription's account; its grants and drains go to its {@link Sink}. Guarded by {@link #lock}. */
    static final class Member extends CreditAccount {
        final Sink sink;

        private Member(String name, int window, Object lock, Sink sink) {
            super(name, window, lock);
            this.sink = sink;
        }

        @Override
        void grantOnLink(int credits) {
            sink.grant(this, credits);
        }

        @Override
        void drainLink() {
            sink.drain(this);
        }
    }

    private final int budget;
    private final CreditShares shares;
    private final List<Member> members = new ArrayList<>();
    private volatile boolean paused;
    private volatile boolean stopped;
    private volatile boolean lending;
    private volatile boolean drainAllowed;

    /** @param budget deliveries all members may hold together, 0 for no cap */
    CreditAllocator(int budget) {
        this.budget = budget;
        this.shares = new CreditShares(budget);
    }

    /** @return whether members share a budget */
    boolean limited() {
        return budget > 0;
    }

    /**
     * @param name the subscription name
     * @param window the most it may hold
     * @param sink where the member's grants and drains go
     * @return its account, not yet attached (its share is reserved while it starts)
     */
    Member join(String name, int window, Sink sink) {
        synchronized (this) {
            Member m = new Member(name, window, budget > 0 ? this : new Object(), sink);
            m.target = budget > 0 ? 0 : window;
            members.add(m);
            targets();
            return m;
        }
    }

    /**
     * Sets what the broker allows: drains at all (to take credit back when pausing), and lending the share of a member
     * whose link is down (only where drains work, since taking it back needs one).
     *
     * @param drainPerSpec whether the broker answers drains as the spec says
     */
    void brokerDrains(boolean drainPerSpec) {
        synchronized (this) {
            this.drainAllowed = drainPerSpec;
            this.lending = drainPerSpec;
            targets();
        }
        rebalanceAll();
    }

    /** @return whether a member whose link is down lends its share */
    synchronized boolean lending() {
        return lending;
    }

    /** The member's link is attached and may be granted credit; {@code outstanding} already counts what it holds. */
    void attached(Member m) {
        synchronized (m.lock) {
            m.attached = true;
            m.starting = false;
            m.draining = false;
            targets();
            rebalance(m);
        }
    }

    /**
     * The member's link is gone.
     *
     * @param m the member
     * @param unused slots that went with it (credit and queued deliveries; deliveries in hand stay counted)
     */
    void detached(Member m, int unused) {
        synchronized (m.lock) {
            m.attached = false;
            m.starting = false;
            m.draining = false;
            m.outstanding -= unused;
            targets();
            rebalance(m);
        }
    }

    /**
     * Slots freed: a delivery finished, a transfer was aborted (it used one credit), or credit was given back.
     *
     * @param m the member
     * @param slots how many
     */
    void released(Member m, int slots) {
        synchronized (m.lock) {
            m.outstanding -= slots;
            rebalance(m);
        }
    }

    /**
     * A drain of the member's link was answered.
     *
     * @param m the member
     * @param unused the credit the broker gave back unused
     */
    void drained(Member m, int unused) {
        synchronized (m.lock) {
            m.draining = false;
            m.outstanding -= unused;
            rebalance(m);
        }
    }

    /** The member is closing: it is granted nothing more, and its share goes to the others. */
    void leave(Member m) {
        synchronized (m.lock) {
            m.closed = true;
            m.attached = false;
            targets();
            rebalance(m);
        }
    }

    /** Stops every grant and takes unused credit back where the broker answers drains per spec. */
    void pause() {
        List<Member> all;
        synchronized (this) {
            paused = true;
            all = List.copyOf(members);
        }
        for (Member m : all) {
            synchronized (m.lock) {
                if (drainAllowed && m.attached && !m.draining && m.holdsUnused()) {
                    m.startDrain();
                }
            }
        }
    }

    /**
     * The application paused one member: it is granted nothing more, and its unused credit is taken back where the
     * broker answers drains per spec (as the store-outage {@link #pause()} does for all).
     *
     * @param m the member
     * @return whether a drain was started
     */
    boolean pause(Member m) {
        synchronized (m.lock) {
            m.paused = true;
            if (drainAllowed && m.attached && !m.draining && m.holdsUnused()) {
                m.startDrain();
                return true;
            }
            return false;
        }
    }

    /**
     * The application resumed one member: it is granted again (unless the whole consumer is paused).
     *
     * @param m the member
     */
    void resume(Member m) {
        synchronized (m.lock) {
            m.paused = false;
            rebalance(m);
        }
    }

    /** The consumer is closing: no grants from now on. */
    void stop() {
        synchronized (this) {
            stopped = true;
        }
        if (budget == 0) {
            for (Member m : List.copyOf(members)) {
                synchronized (m.lock) {
                    m.closed = true;
                }
            }
        }
    }

    /** Grants again, to every member. */
    void resume() {
        synchronized (this) {
            paused = false;
        }
        rebalanceAll();
    }

    /**
     * Takes a member's unused credit back (a drain), if the broker answers drains per spec; no grants meanwhile.
     *
     * @param m the member
     * @return whether a drain was started
     */
    boolean reclaim(Member m) {
        synchronized (m.lock) {
            if (!drainAllowed || !m.attached || m.draining) {
                return false;
            }
            m.startDrain();
            return true;
        }
    }

    /** @return whether grants are stopped */
    synchronized boolean paused() {
        return paused;
    }

    private void rebalanceAll() {
        List<Member> all;
        synchronized (this) {
            all = List.copyOf(members);
        }
        if (budget > 0) {
            synchronized (this) {
                rebalance(null);
            }
        } else {
            for (Member m : all) {
                synchronized (m.lock) {
                    rebalance(m);
                }
            }
        }
    }

    /** Under the member's lock (the allocator's own when limited). */
    private void rebalance(Member changed) {
        if (budget == 0) {
            if (changed != null) {
                CreditShares.grantIfDue(changed, Integer.MAX_VALUE, paused || stopped);
            }
            return;
        }
        shares.rebalance(members, paused || stopped, drainAllowed && !paused);
    }

    /** Water-fills the budget over the members that count; under the allocator's lock. */
    private void targets() {
        if (budget > 0) {
            shares.targets(members, lending);
        }
    }
}

package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;

/**
 * The credit side of one subscription: turns the {@link CreditAllocator}'s decisions into grants and drains on the
 * current link, and the link's events (a delivery finished, a transfer aborted, a drain answered, the link ended) into
 * allocator events. Every count changes under the member's lock.
 */
final class LinkCredit implements CreditAllocator.Sink {

    private final CreditAllocator allocator;
    private final Control control;
    private final CurrentBroker broker;
    private final java.time.Duration requestTimeout;
    private final CreditAllocator.Member member;
    private final Supplier<ReceiverLink> current;
    private final List<ReceiverLink> retiring = new CopyOnWriteArrayList<>();
    private volatile CompletableFuture<Void> drainAnswered;
    private volatile ReceiverLink draining;
    private int checkedOutstanding = -1;

    /**
     * @param requestTimeout how long a drain may stay unanswered
     * @param current the subscription's current link
     */
    LinkCredit(CreditAllocator allocator, Control control, CurrentBroker broker, java.time.Duration requestTimeout,
               String name, int window, Supplier<ReceiverLink> current) {
        this.allocator = allocator;
        this.control = control;
        this.broker = broker;
        this.requestTimeout = requestTimeout;
        this.current = current;
        this.member = allocator.join(name, window, this);
        this.member.inHand = this::inHand;
    }

    CreditAllocator.Member member() {
        return member;
    }

    @Override
    public void grant(CreditAllocator.Member m, int credits) {
        ReceiverLink l = current.get();
        l.outstanding += credits;
        l.grant(credits);
    }

    @Override
    public void drain(CreditAllocator.Member m) {
        ReceiverLink l = current.get();
        draining = l;
        java.time.Duration timeout = requestTimeout;
        l.drain(timeout.toMillis(), unused -> drained(l, unused));
        control.later(() -> drainUnanswered(l), timeout);
    }

    /** A broker that never answers a drain must not leave the link without credit for good. */
    private void drainUnanswered(ReceiverLink link) {
        if (draining != link || !link.isValid()) {
            return;
        }
        if (broker.profile().drainUnanswered()) {
            allocator.brokerDrains(false);
        }
        drained(link, 0);
    }

    void drained(ReceiverLink link, int unused) {
        if (draining == link) {
            draining = null;
        }
        synchronized (member.lock) {
            if (link.isValid()) {
                link.outstanding -= unused;
                allocator.drained(member, unused);
            }
        }
        CompletableFuture<Void> f = drainAnswered;
        if (f != null) {
            f.complete(null);
        }
    }

    /** A transfer on {@code link} was aborted: it used one credit. */
    void aborted(ReceiverLink link) {
        synchronized (member.lock) {
            if (link.isValid()) {
                link.outstanding--;
                allocator.released(member, 1);
            }
        }
    }

    /**
     * Drains the current link (where the broker answers drains per spec) and returns a future completed when the
     * answer arrives.
     */
    CompletableFuture<Void> drainNow() {
        CompletableFuture<Void> answered = new CompletableFuture<>();
        drainAnswered = answered;
        synchronized (member.lock) {
            drain(member);
        }
        return answered;
    }

    /**
     * The application paused the subscription: no grants, and unused credit taken back where drains work.
     *
     * @return completed when the drain is answered (at once if none was started)
     */
    CompletableFuture<Void> pause() {
        CompletableFuture<Void> answered = new CompletableFuture<>();
        drainAnswered = answered;
        if (!allocator.pause(member)) {
            answered.complete(null);
        }
        return answered;
    }

    /**
     * The link was detached: its unused credit and queued deliveries go back to the budget; deliveries in hand keep
     * their slots until they finish.
     *
     * @return false if the link had ended already
     */
    boolean detached(ReceiverLink link) {
        synchronized (member.lock) {
            int inHand = link.invalidate(ReceiverLink.End.DETACHED);
            if (inHand < 0) {
                return false;
            }
            int unused = link.outstanding - inHand;
            link.outstanding = inHand;
            if (inHand > 0) {
                retiring.add(link);
            }
            allocator.detached(member, unused);
            return true;
        }
    }

    /**
     * The connection was interrupted: the link ends, and its successor over the same receiver inherits the unused
     * credit and queued deliveries (protonj2 re-grants exactly that on the new connection). No grants until it is back.
     *
     * @return the successor, or null if the link had ended already
     */
    ReceiverLink interrupted(ReceiverLink link) {
        synchronized (member.lock) {
            int inHand = link.invalidate(ReceiverLink.End.INTERRUPTED);
            if (inHand < 0) {
                return null;
            }
            ReceiverLink successor = link.successor();
            successor.outstanding = link.outstanding - inHand;
            link.outstanding = inHand;
            if (inHand > 0) {
                retiring.add(link);
            }
            allocator.detached(member, 0);
            return successor;
        }
    }

    /**
     * A delivery was taken after its link had ended. After an interruption its slot was inherited by the successor,
     * although protonj2 did not re-grant it (the delivery had left the queue): free it there.
     */
    void lateTake(ReceiverLink ended) {
        if (ended.end() != ReceiverLink.End.INTERRUPTED) {
            return; // its slot went back to the budget with the link
        }
        synchronized (member.lock) {
            ReceiverLink now = current.get();
            if (now != null && now.receiver == ended.receiver && now != ended) {
                now.outstanding--;
                allocator.released(member, 1);
            }
        }
    }

    /**
     * Without engine hooks only: a link that sat idle with unused credit since the last check is drained and
     * re-granted, which repairs credit eaten by aborted transfers and a session window stalled by payload-less frames.
     * Does nothing where the broker does not answer drains per spec.
     */
    void check() {
        ReceiverLink l = current.get();
        if (l == null || !l.attached()) {
            return;
        }
        int outstanding = member.outstanding();
        boolean idle = outstanding == checkedOutstanding && outstanding - inHand() > 0;
        checkedOutstanding = outstanding;
        try {
            if (idle && l.receiver.queuedDeliveries() == 0) {
                allocator.reclaim(member);
            }
        } catch (org.apache.qpid.protonj2.client.exceptions.ClientException e) {
            // the link is closing; its loss is handled where it is noticed
        }
    }

    /** @return deliveries taken by handler threads and not finished, on every link */
    int inHand() {
        ReceiverLink l = current.get();
        int n = l == null ? 0 : l.inHand();
        for (ReceiverLink old : retiring) {
            int h = old.inHand();
            if (h == 0) {
                retiring.remove(old);
            }
            n += h;
        }
        return n;
    }

    /**
     * The link that accounts for a delivery taken from the receiver of {@code from}. protonj2 keeps that receiver
     * across a reconnect, so a delivery taken while {@code from} is current may have arrived on its successor (a receive
     * that waited through the reconnect), and one taken after the successor became current may still have arrived on
     * the lost connection (taken just before protonj2 emptied its queue, or just before this thread learnt of the
     * loss). Such a delivery is never live, whichever link accounts for it: {@link ReceiverLink#live} asks the
     * delivery's own connection. While the successor is not attached yet, it is accounted to the link that ended with
     * the connection, as it arrived there.
     *
     * @param from the link whose receiver the delivery was taken from
     * @param amqp the delivery
     * @return the link that owns it
     */
    ReceiverLink owner(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        ReceiverLink now = current.get();
        if (now == null || now.receiver != from.receiver) {
            return from;
        }
        if (now.predecessor != null && !now.attached() && ProtonInternals.connectionLost(amqp)) {
            return now.predecessor; // the successor is not attached yet: the delivery came over the lost connection
        }
        return now;
    }
}

package org.acemq.amqp.consumer.internal;

import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.internal.engine.HookedLink;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One incarnation of a subscription's receiver link: attached once, valid until the broker detaches it, its session
 * ends or the connection is interrupted, then {@linkplain #invalidate() invalid} for good. A delivery remembers the
 * link it came on; a disposition is sent only while that link is still valid, because protonj2 silently drops a
 * disposition for a delivery from before a reconnect while reporting it settled (the broker redelivers such deliveries
 * and the store absorbs the copies). After protonj2 re-attaches a receiver on reconnect, the runtime wraps it in a new
 * link ({@link #successor()}); a link the broker ended is replaced by a new receiver, never re-used.
 *
 * <p><b>Accounting.</b> {@code outstanding} counts this link's slots (credit the broker may use, deliveries queued in
 * the client, deliveries in hand); it is guarded by the member's lock. Deliveries in hand are also counted in one
 * atomic word together with the valid bit, so a handler thread can take a delivery without a lock and an invalidation
 * knows exactly how many were in hand at that moment.
 */
final class ReceiverLink {

    private static final Logger LOG = LoggerFactory.getLogger(ReceiverLink.class);
    private static final int INVALID = 0x8000_0000;

    /** Why a link became invalid. */
    enum End {
        /** The broker detached or closed it, its session ended, or the subscription closed it. */
        DETACHED,
        /** The connection was interrupted; protonj2 re-attaches the same receiver as the successor link. */
        INTERRUPTED
    }

    final Receiver receiver;
    final Session session;
    final long generation;
    final CreditAllocator.Member member;
    /** The link this one succeeds over the same receiver after a connection interruption, or null. */
    final ReceiverLink predecessor;
    private final AtomicInteger state = new AtomicInteger();
    private final Executor control;
    private volatile HookedLink hooks;
    private volatile boolean attached;
    private volatile End end;
    private final java.util.concurrent.atomic.AtomicBoolean beyondCredit =
            new java.util.concurrent.atomic.AtomicBoolean();
    /** Slots of this link; guarded by {@code member.lock}. */
    int outstanding;

    ReceiverLink(Receiver receiver, Session session, long generation, CreditAllocator.Member member,
                 Executor control) {
        this(receiver, session, generation, member, control, null);
    }

    private ReceiverLink(Receiver receiver, Session session, long generation, CreditAllocator.Member member,
                         Executor control, ReceiverLink predecessor) {
        this.predecessor = predecessor;
        this.receiver = receiver;
        this.session = session;
        this.generation = generation;
        this.member = member;
        this.control = control;
    }

    /** @return the link that wraps the same receiver after protonj2 re-attached it on a new connection */
    ReceiverLink successor() {
        return new ReceiverLink(receiver, session, generation + 1, member, control, this);
    }

    /** @return whether deliveries of this link may still be settled */
    boolean isValid() {
        return state.get() >= 0;
    }

    /** @return whether the link is attached now (false between an interruption and the re-attach) */
    boolean attached() {
        return attached && isValid();
    }

    void attached(boolean attached) {
        this.attached = attached;
    }

    /** @return why the link ended, or null while valid */
    End end() {
        return end;
    }

    /**
     * Ends the link, once.
     *
     * @param why why it ended
     * @return the deliveries in hand at that moment, or -1 if it had ended already
     */
    int invalidate(End why) {
        int before = state.getAndUpdate(s -> s | INVALID);
        if (before < 0) {
            return -1;
        }
        end = why;
        attached = false;
        return before;
    }

    /**
     * Counts a delivery a handler thread took from the client.
     *
     * @return false if the link was invalid already (the delivery is then not counted: its slot went with the link)
     */
    boolean take() {
        while (true) {
            int s = state.get();
            if (s < 0) {
                return false;
            }
            if (state.compareAndSet(s, s + 1)) {
                return true;
            }
        }
    }

    /** A counted delivery finished; under {@code member.lock}. */
    void finished() {
        state.decrementAndGet();
        outstanding--;
    }

    /** @return true the first time a delivery beyond this link's credit is reported (for a WARN once per link) */
    boolean firstBeyondCredit() {
        return beyondCredit.compareAndSet(false, true);
    }

    /** @return deliveries taken from the client and not finished */
    int inHand() {
        return state.get() & ~INVALID;
    }

    void hooks(HookedLink hooks) {
        this.hooks = hooks;
    }

    /**
     * Grants credit. With engine hooks the grant is handed to the connection's I/O thread and the caller does not
     * wait; without them (the fallback) it goes through protonj2's client API and waits for the I/O thread, in order.
     */
    void grant(int credits) {
        HookedLink h = hooks;
        if (h != null) {
            h.grant(credits);
            return;
        }
        try {
            receiver.addCredit(credits);
        } catch (ClientException | RuntimeException e) {
            LOG.debug("Granting {} credit to '{}' failed: {}", credits, member.name, Errors.describe(e));
        }
    }

    /**
     * Drains the link without blocking the caller; the answer goes to {@code answer} (the unused credit given back).
     * Without engine hooks the unused credit is estimated from the client's queue after the drain.
     */
    void drain(long timeoutMillis, java.util.function.IntConsumer answer) {
        HookedLink h = hooks;
        if (h != null) {
            h.drain();
            return;
        }
        control.execute(() -> {
            try {
                receiver.drain().get(timeoutMillis, TimeUnit.MILLISECONDS);
                long queued = receiver.queuedDeliveries();
                int unused;
                synchronized (member.lock) {
                    unused = (int) Math.max(0, outstanding - inHand() - queued);
                }
                answer.accept(unused);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                LOG.debug("Drain of '{}' did not complete: {}", member.name, Errors.describe(e));
                answer.accept(0);
            }
        });
    }

    /**
     * @param delivery a delivery that arrived on this link
     * @return whether it can still be settled: the link is valid and the connection it came over has not failed
     *     (protonj2 reports an interruption a little after the engine knows it)
     */
    boolean live(org.apache.qpid.protonj2.client.Delivery delivery) {
        return isValid() && !ProtonInternals.connectionLost(delivery);
    }

    /**
     * Settles a delivery of this link outside a transaction (at-least-once, and at-most-once on a broker that sent it
     * unsettled), if the link is still valid and its connection alive. With engine hooks the disposition is written by
     * a task of the runtime's own on the connection's I/O thread, which checks there, at the moment of writing, that
     * the engine and link are still alive: a connection that fails between this hand-over and the write (the I/O
     * thread can be busy for seconds) makes it drop the disposition, and {@code dropped} then runs on the control
     * thread. Without hooks (the fallback) it is {@link #send}, through protonj2's client API. Writing on the engine
     * delivery bypasses the session's transaction context, which is right here: a transactional subscription has a
     * session of its own (session groups are refused with {@code TRANSACTIONAL}) and settles through {@link #send}.
     *
     * @param dropped runs once if a disposition handed over was dropped by the I/O thread; must not block
     * @return whether the disposition was handed to a live link
     */
    boolean settle(org.apache.qpid.protonj2.client.Delivery delivery, Outcome outcome, String condition,
                   String description, Runnable dropped) {
        HookedLink h = hooks;
        if (h == null) {
            return send(delivery, outcome, condition, description);
        }
        if (!live(delivery)) {
            return false;
        }
        HookedLink.Handover handover = h.settle(delivery, outcome, condition, description, () -> {
            try {
                control.execute(dropped);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                dropped.run(); // the consumer has closed: report it here rather than not at all
            }
        });
        return switch (handover) {
            case QUEUED -> true;
            case REFUSED -> false;
            case UNSUPPORTED -> send(delivery, outcome, condition, description);
        };
    }

    /**
     * Sends an outcome for a delivery of this link through protonj2's client API, if the link is still valid and its
     * connection alive: what transactional settlement uses (protonj2 enlists the outcome in the session's
     * transaction), and {@link #settle} without engine hooks. A delivery of a lost connection gets no disposition at
     * all: protonj2 would drop it and log {@code ENGINE_SHUTDOWN}. protonj2 writes it later, on the I/O thread; if the
     * connection fails before, it still logs {@code ENGINE_SHUTDOWN}.
     *
     * @return whether the disposition was handed to a live link
     */
    boolean send(org.apache.qpid.protonj2.client.Delivery delivery, Outcome outcome, String condition,
                 String description) {
        if (!live(delivery)) {
            return false;
        }
        try {
            switch (outcome) {
                case ACCEPTED -> delivery.accept();
                case RELEASED -> delivery.release();
                case MODIFIED -> delivery.modified(true, false);
                case REJECTED -> delivery.reject(condition, description);
                default -> throw new IllegalStateException("unknown outcome " + outcome);
            }
        } catch (ClientException e) {
            LOG.debug("Subscription '{}': disposition not sent: {}", member.name, Errors.describe(e));
            return false;
        }
        return live(delivery);
    }

    @Override
    public String toString() {
        return member.name + "#" + generation + (isValid() ? "" : " (" + end + ")");
    }
}

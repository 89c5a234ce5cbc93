package org.acemq.amqp.consumer.internal;

import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.engine.EventHandler;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.apache.qpid.protonj2.engine.Scheduler;
import org.apache.qpid.protonj2.types.messaging.Released;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine hooks of one link incarnation (see {@link EngineHooks}): handlers around protonj2's own read, abort and
 * credit handlers, which report to {@link HookEvents}, count a drain's unused credit exactly, release deliveries
 * beyond credit and repair the session window; plus grants, drains and settled dispositions written as the runtime's
 * own tasks on the connection's I/O thread. Counters are confined to the I/O thread.
 */
final class LinkHooks {

    private static final Logger LOG = LoggerFactory.getLogger(LinkHooks.class);

    /** What became of a disposition handed to {@link #settle}. */
    enum Handover {
        /** Queued on the I/O thread, which writes it or drops it. */
        QUEUED,
        /** The I/O thread refused the task: nothing will be written. */
        REFUSED,
        /** The engine delivery cannot be read: settle through protonj2's client API instead. */
        UNSUPPORTED
    }

    private final EngineAccess access;
    private final Receiver receiver;
    private final HookEvents listener;
    private final Scheduler io;
    private final Dispositions dispositions;
    private Object window;         // the session's incoming window (engine), looked up once per install
    private int events;           // arrivals and aborts since install
    private int drainCredit = -1; // credit when the pending drain started, -1 if none
    private int drainEvents;
    private int credit;           // the engine's credit after the last event the hooks saw

    private LinkHooks(EngineAccess access, Receiver receiver, HookEvents listener) {
        this.access = access;
        this.receiver = receiver;
        this.listener = listener;
        this.io = access.ioThread(receiver);
        this.dispositions = new Dispositions(io, receiver.connection());
    }

    /**
     * Hooks one receiver: its remote-close handler at once, its engine handlers on its I/O thread.
     *
     * @return the handle through which credit is granted and drained
     */
    static LinkHooks install(EngineAccess access, Receiver receiver, HookEvents listener) {
        LinkHooks hooked = new LinkHooks(access, receiver, listener);
        access.onRemoteClose(receiver, r -> {
            org.apache.qpid.protonj2.types.transport.ErrorCondition error = hooked.engine().getRemoteCondition();
            String condition = error == null || error.getCondition() == null ? null : error.getCondition().toString();
            listener.closedByPeer(condition, error == null ? null : error.getDescription());
        });
        hooked.onIoThread(hooked::wrap);
        return hooked;
    }

    private org.apache.qpid.protonj2.engine.Receiver engine() {
        return access.engine(receiver);
    }

    /** Runs {@code task} on the connection's I/O thread (a failure is logged at DEBUG); also for tests. */
    void onIoThread(Runnable task) {
        io.execute(() -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.debug("Engine hook task failed: {}", Errors.describe(e));
            }
        });
    }

    /** Grants {@code credits} without waiting (on the I/O thread; dropped if the link has closed). */
    void grant(int credits) {
        onIoThread(() -> {
            org.apache.qpid.protonj2.engine.Receiver engine = engine();
            if (engine.isLocallyOpen()) {
                engine.addCredit(credits);
                credit = engine.getCredit();
            }
        });
    }

    /**
     * Settles a delivery of this receiver with {@code state} on the connection's I/O thread, batched with the link's
     * other dispositions ({@link Dispositions}: one task and one flush per batch), and returns at once. The I/O thread
     * first checks, there, that the delivery's engine and link are still alive: a connection that
     * failed after the hand-over (protonj2 fails the engine on the I/O thread, so a saturated I/O thread can fail it
     * while the task waits in its queue) makes the task drop the disposition, log it at DEBUG and run
     * {@code dropped}, instead of letting the engine throw {@code EngineShutdownException}. This is what protonj2's
     * {@code accept()} does outside a transaction (a settled disposition through the session's no-op transaction
     * context), minus its credit top-up, which is off: the runtime opens receivers with credit window 0.
     *
     * @param delivery a delivery from this receiver
     * @param state the outcome
     * @param dropped runs on the I/O thread if the disposition was dropped there; must not block
     * @return {@link Handover#QUEUED}; {@link Handover#REFUSED} if the I/O thread takes no more tasks (the connection
     *     is closed); {@link Handover#UNSUPPORTED} if the engine delivery cannot be read (use the client API)
     */
    Handover settle(org.apache.qpid.protonj2.client.Delivery delivery,
                    org.apache.qpid.protonj2.types.transport.DeliveryState state, Runnable dropped) {
        IncomingDelivery incoming = EngineDeliveries.engineDelivery(delivery);
        if (incoming == null) {
            return Handover.UNSUPPORTED;
        }
        return dispositions.add(incoming, state, dropped) ? Handover.QUEUED : Handover.REFUSED;
    }

    /** Drains the link; the answer goes to {@link HookEvents#drained}. */
    void drain() {
        onIoThread(() -> {
            org.apache.qpid.protonj2.engine.Receiver engine = engine();
            if (!engine.isLocallyOpen() || drainCredit >= 0) {
                return;
            }
            int credit = engine.getCredit();
            if (credit == 0 || engine.isDraining()) {
                listener.drained(0);
                return;
            }
            drainCredit = credit;
            drainEvents = events;
            engine.drain();
        });
    }

    private void wrap() {
        org.apache.qpid.protonj2.engine.Receiver engine = engine();
        WholeFrames.install(engine.getEngine()); // protonj2 1.1.0 fails on frames split over 3+ reads: see there
        window = access.window(engine);
        EventHandler<IncomingDelivery> read = unwrap(access.readHandler(engine));
        EventHandler<IncomingDelivery> aborted = unwrap(access.abortedHandler(engine));
        EventHandler<org.apache.qpid.protonj2.engine.Receiver> credit = unwrap(access.creditHandler(engine));
        this.credit = engine.getCredit();
        engine.deliveryReadHandler(new Composite<>(new CreditGate(read), d -> {
            if (!d.isPartial()) {
                this.credit = engine.getCredit();
            }
        }));
        engine.deliveryAbortedHandler(new Composite<>(aborted, d -> {
            if (this.credit > 0) {
                events++;
                listener.aborted(); // an abort beyond credit used none of ours
            }
            this.credit = engine.getCredit();
        }));
        engine.creditStateUpdateHandler(new Composite<>(credit, r -> {
            this.credit = r.getCredit();
            drainAnswered(r);
        }));
    }

    /**
     * In front of protonj2's read handler: a completed delivery that the link had no credit left for (and that the
     * broker did not settle) is released and settled here and never reaches the client's queue; every other frame goes
     * to protonj2. Runs before the credit is read again, so {@code credit} is still what the link had before this
     * transfer.
     */
    private final class CreditGate implements EventHandler<IncomingDelivery> {
        private final EventHandler<IncomingDelivery> original;

        CreditGate(EventHandler<IncomingDelivery> original) {
            this.original = original;
        }

        @Override
        public void handle(IncomingDelivery d) {
            if (d.isPartial()) {
                if (original != null) {
                    original.handle(d);
                }
                return;
            }
            if (credit > 0 || d.isRemotelySettled()) {
                if (credit > 0) {
                    events++;
                }
                if (original != null) {
                    original.handle(d);
                }
                return;
            }
            // Take the payload and free it: its bytes no longer count against the session window, and the buffer
            // (pooled, often direct memory) goes back to its pool. Only claiming the bytes would leave the buffer with
            // the settled delivery, never freed: a 1,000,000-message RabbitMQ soak ran out of direct memory.
            ProtonBuffer payload = d.readAll();
            if (payload != null) {
                payload.close();
            }
            d.disposition(Released.getInstance(), true);
            listener.beyondCredit();
        }
    }

    private void drainAnswered(org.apache.qpid.protonj2.engine.Receiver engine) {
        if (drainCredit >= 0 && engine.getCredit() == 0 && !engine.isDraining()) {
            int unused = Math.max(0, drainCredit - (events - drainEvents));
            drainCredit = -1;
            listener.drained(unused);
        }
    }

    /** Around protonj2's handler: runs it, then repairs the session window if the frame closed it. */
    private final class Composite<T> implements EventHandler<T> {
        private final EventHandler<T> original;
        private final EventHandler<T> after;

        Composite(EventHandler<T> original, EventHandler<T> after) {
            this.original = original;
            this.after = after;
        }

        @Override
        public void handle(T target) {
            Object window = LinkHooks.this.window;
            int before = window == null ? -1 : access.size(window);
            if (original != null) {
                original.handle(target);
            }
            after.handle(target);
            if (window != null && (before == 0 || access.size(window) == 0)) {
                org.apache.qpid.protonj2.engine.Receiver engine = engine();
                access.reopen(engine, window, access.size(window) == 0 ? null : engine);
            }
        }
    }

    /** @return protonj2's own handler under the wrappers of an earlier install (of this link or another) */
    @SuppressWarnings("unchecked")
    private static <T> EventHandler<T> unwrap(EventHandler<T> handler) {
        while (true) {
            if (handler instanceof LinkHooks.Composite<?> c) {
                handler = (EventHandler<T>) c.original;
            } else if (handler instanceof LinkHooks.CreditGate g) {
                handler = (EventHandler<T>) g.original;
            } else {
                return handler;
            }
        }
    }
}

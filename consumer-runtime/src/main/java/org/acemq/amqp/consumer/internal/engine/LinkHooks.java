package org.acemq.amqp.consumer.internal.engine;

import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.internal.Errors;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.engine.EventHandler;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.apache.qpid.protonj2.engine.Scheduler;
import org.apache.qpid.protonj2.types.messaging.Accepted;
import org.apache.qpid.protonj2.types.messaging.Modified;
import org.apache.qpid.protonj2.types.messaging.Rejected;
import org.apache.qpid.protonj2.types.messaging.Released;
import org.apache.qpid.protonj2.types.transport.DeliveryState;
import org.apache.qpid.protonj2.types.transport.ErrorCondition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine hooks of one link incarnation, installed by {@link ProtonInternals#hook}. protonj2's client API exposes neither of the two
 * events that eat link credit: an aborted transfer (it uses one credit, and a plain {@code Receiver} never hands it
 * out; the class of PROTON-1512) and a session incoming window closed by payload-less frames while credit is
 * outstanding (protonj2 re-opens it only by a link flow, and then names one link only; the class of QPID-8751).
 * protonj2's engine has both, so the hooks install, on the connection's I/O thread, handlers around protonj2's own ones
 * (which run first): they report aborts and arrivals to the link's {@link HookEvents}, count a drain's
 * unused credit exactly, and write a flow for every link of the session that still has credit when the window closes
 * (or when protonj2 re-opened it for one link only). They also grant credit and start drains without blocking the
 * caller, and write settled dispositions outside transactions as their own I/O-thread tasks, which drop a disposition
 * whose connection failed while it waited in the I/O thread's queue ({@link #settle}) instead of handing it to
 * a shut-down engine.
 *
 * <p><b>Deliveries beyond credit.</b> protonj2 does not fail a link whose peer sends more transfers than the link
 * credit allows: it floors the credit at 0, counts the transfer in the delivery-count and queues the delivery like any
 * other. RabbitMQ 3.x does exactly that under load (its AMQP 1.0 plugin re-grants the queue credit for deliveries it
 * has buffered but not yet sent: rabbitmq-server#2597), so a consumer would hold far more than it asked for. The read
 * hook therefore decides, before protonj2's client sees a completed delivery, whether the link had any credit left for
 * it: the hook knows the credit after every event that changes it (its own grants, the broker's flows, each transfer,
 * since protonj2 re-grants credit by itself only when it re-creates a link, before the hooks go on). A delivery that
 * arrives when that credit was 0 and that the broker did not settle is released at once on the I/O thread, its
 * payload read (its bytes given back to the session window) and its pooled buffer freed, and never queued in the
 * client: no store call, no handler, no slot. The link's events are told. The runtime sends no flow while its own
 * credit is used up, so the broker's excess stops once it has burnt what it granted itself.
 *
 * <p>Reflection reaches {@code client.impl} and {@code engine.impl} types ({@link EngineAccess} for the hooks,
 * {@link EngineDeliveries} for a delivery's engine). If anything is missing (another protonj2 version)
 * {@link ProtonInternals#hooksAvailable()} is false, that is logged once, and the runtime falls back to its periodic credit check.
 * {@value ProtonInternals#DISABLE_PROPERTY}{@code =false} turns the hooks off for the consumers built while it is set.
 *
 * <p>Each install also puts {@link WholeFrames} in front of the connection's frame decoder (once per engine), a
 * workaround for a protonj2 1.1.0 composite-buffer bug that fails the connection on a frame split over three or more
 * socket reads.
 *
 * <p>Counters are confined to the I/O thread.
 */
final class LinkHooks implements HookedLink {

    private static final Logger LOG = LoggerFactory.getLogger(LinkHooks.class);

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
            ErrorCondition error = hooked.engine().getRemoteCondition();
            String condition = error == null || error.getCondition() == null ? null : error.getCondition().toString();
            listener.closedByPeer(condition, error == null ? null : error.getDescription());
        });
        hooked.onIoThread(hooked::wrap);
        return hooked;
    }

    private org.apache.qpid.protonj2.engine.Receiver engine() {
        return access.engine(receiver);
    }

    /** Runs {@code task} on the connection's I/O thread (a failure is logged at DEBUG). */
    void onIoThread(Runnable task) {
        io.execute(() -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.debug("Engine hook task failed: {}", Errors.describe(e));
            }
        });
    }

    @Override
    public void grant(int credits) {
        onIoThread(() -> {
            org.apache.qpid.protonj2.engine.Receiver engine = engine();
            if (engine.isLocallyOpen()) {
                engine.addCredit(credits);
                credit = engine.getCredit();
            }
        });
    }

    /**
     * Hands a settled disposition to the link's {@link Dispositions} (see {@link HookedLink#settle}): the
     * I/O thread checks, at the moment of writing, that the delivery's engine and link are still alive, because
     * protonj2 fails the engine on the I/O thread, so a saturated I/O thread can fail it while the task waits in its
     * queue. Writing on the engine delivery bypasses the session's transaction context, which is right outside
     * transactions (a transactional subscription settles through the client API).
     */
    @Override
    public Handover settle(Delivery delivery, Outcome outcome, String condition, String description,
                                           Runnable dropped) {
        IncomingDelivery incoming = EngineDeliveries.engineDelivery(delivery);
        if (incoming == null) {
            return Handover.UNSUPPORTED;
        }
        return dispositions.add(incoming, state(outcome, condition, description), dropped)
                ? Handover.QUEUED : Handover.REFUSED;
    }

    private static DeliveryState state(Outcome outcome, String condition, String description) {
        return switch (outcome) {
            case ACCEPTED -> Accepted.getInstance();
            case RELEASED -> Released.getInstance();
            case MODIFIED -> new Modified().setDeliveryFailed(true).setUndeliverableHere(false);
            case REJECTED -> new Rejected().setError(new ErrorCondition(condition, description));
        };
    }

    @Override
    public void drain() {
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

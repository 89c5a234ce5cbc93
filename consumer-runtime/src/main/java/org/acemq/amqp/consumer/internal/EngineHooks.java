package org.acemq.amqp.consumer.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Consumer;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.engine.EventHandler;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.apache.qpid.protonj2.engine.Scheduler;
import org.apache.qpid.protonj2.types.messaging.Released;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place where the runtime reaches into protonj2 1.1.0 below its client API, which exposes neither of the two
 * events that eat link credit: an aborted transfer (it uses one credit, and a plain {@code Receiver} never hands it
 * out; the class of PROTON-1512) and a session incoming window closed by payload-less frames while credit is
 * outstanding (protonj2 re-opens it only by a link flow, and then names one link only; the class of QPID-8751).
 * protonj2's engine has both, so this class
 * installs, on the connection's I/O thread, handlers around protonj2's own ones (which run first): they report
 * aborts and arrivals to a {@link Listener}, count a drain's unused credit exactly, and write a flow for every link of
 * the session that still has credit when the window closes (or when protonj2 re-opened it for one link only). It also
 * grants credit and starts drains without blocking the caller, and writes settled dispositions outside transactions
 * as its own I/O-thread tasks, which drop a disposition whose connection failed while it waited in the I/O thread's
 * queue ({@link Hooked#settle}) instead of handing it to a shut-down engine.
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
 * client: no store call, no handler, no slot. The {@link Listener} is told. The runtime sends no flow while its own
 * credit is used up, so the broker's excess stops
 * once it has burnt what it granted itself.
 *
 * <p>Reflection reaches {@code client.impl} and {@code engine.impl} types (the jars are automatic modules, whose
 * packages are open). If anything is missing (another protonj2 version) {@link #available()} is false, that is logged
 * once, and the runtime falls back to its periodic credit check. Setting the system property
 * {@value #DISABLE_PROPERTY} to {@code false} turns the hooks off (for diagnosis, and for tests of the fallback) for
 * the consumers built while it is set: it is read once per consumer, by {@link #get()}, never per link or delivery.
 *
 * <p>A link's handlers are replaced by protonj2 whenever it re-creates the link (every reconnect attempt), so
 * {@link #install} is called after every (re)attach; installing twice is harmless.
 */
final class EngineHooks {

    /** System property: {@code false} turns the engine hooks off. */
    static final String DISABLE_PROPERTY = "acemq.engineHooks";

    private static final Logger LOG = LoggerFactory.getLogger(EngineHooks.class);
    /** Hooks that are not {@link #available()}: turned off, or this protonj2 lacks what they need. */
    private static final EngineHooks OFF = new EngineHooks(false, null, null, null, null, null, null, null, null, null);
    private static final EngineHooks INSTANCE = load();
    /** protonj2's {@code ClientDeliverable.delivery} (the engine delivery behind a client one), or null. */
    private static final VarHandle ENGINE_DELIVERY = engineDelivery();
    private static final Class<?> CLIENT_DELIVERABLE = ENGINE_DELIVERY == null ? null : clientDeliverable();

    /** What the hooks report, on the connection's I/O thread. Implementations must not block. */
    interface Listener {
        /** A transfer was aborted: it used one credit and will never be handed out. */
        void aborted();

        /** A drain started with {@link Hooked#drain()} was answered; {@code unused} credit came back. */
        void drained(int unused);

        /**
         * The broker detached or closed the link.
         *
         * @param condition its error condition, or null
         * @param description its error description, or null
         */
        void closedByPeer(String condition, String description);

        /** A delivery arrived beyond the link's credit and was released unread (a disposition is on its way). */
        void beyondCredit();
    }

    private final boolean available;
    private final VarHandle protonReceiver;
    private final VarHandle executor;
    private final VarHandle remotelyClosed;
    private final VarHandle readHandler;
    private final VarHandle abortedHandler;
    private final VarHandle creditHandler;
    private final MethodHandle sessionWindow;
    private final MethodHandle windowSize;
    private final MethodHandle writeFlow;

    private EngineHooks(boolean available, VarHandle protonReceiver, VarHandle executor, VarHandle remotelyClosed,
                        VarHandle readHandler, VarHandle abortedHandler, VarHandle creditHandler,
                        MethodHandle sessionWindow, MethodHandle windowSize, MethodHandle writeFlow) {
        this.available = available;
        this.protonReceiver = protonReceiver;
        this.executor = executor;
        this.remotelyClosed = remotelyClosed;
        this.readHandler = readHandler;
        this.abortedHandler = abortedHandler;
        this.creditHandler = creditHandler;
        this.sessionWindow = sessionWindow;
        this.windowSize = windowSize;
        this.writeFlow = writeFlow;
    }

    private static EngineHooks load() {
        try {
            MethodHandles.Lookup me = MethodHandles.lookup();
            Class<?> linkType = Class.forName("org.apache.qpid.protonj2.client.impl.ClientLinkType");
            Class<?> receiverLinkType = Class.forName("org.apache.qpid.protonj2.client.impl.ClientReceiverLinkType");
            Class<?> protonReceiver = Class.forName("org.apache.qpid.protonj2.engine.impl.ProtonReceiver");
            Class<?> protonSession = Class.forName("org.apache.qpid.protonj2.engine.impl.ProtonSession");
            Class<?> window = Class.forName("org.apache.qpid.protonj2.engine.impl.ProtonSessionIncomingWindow");
            MethodHandles.Lookup clientLink = MethodHandles.privateLookupIn(linkType, me);
            MethodHandles.Lookup clientReceiver = MethodHandles.privateLookupIn(receiverLinkType, me);
            MethodHandles.Lookup engineReceiver = MethodHandles.privateLookupIn(protonReceiver, me);
            MethodHandles.Lookup engineSession = MethodHandles.privateLookupIn(protonSession, me);
            MethodHandles.Lookup engineWindow = MethodHandles.privateLookupIn(window, me);
            EngineHooks hooks = new EngineHooks(true,
                    clientReceiver.findVarHandle(receiverLinkType, "protonReceiver",
                            org.apache.qpid.protonj2.engine.Receiver.class),
                    clientLink.findVarHandle(linkType, "executor", Scheduler.class),
                    clientLink.findVarHandle(linkType, "linkRemotelyClosedHandler", Consumer.class),
                    engineReceiver.findVarHandle(protonReceiver, "deliveryReadEventHandler", EventHandler.class),
                    engineReceiver.findVarHandle(protonReceiver, "deliveryAbortedEventHandler", EventHandler.class),
                    engineReceiver.findVarHandle(protonReceiver, "linkCreditUpdatedHandler", EventHandler.class),
                    engineSession.unreflect(declared(protonSession, "getIncomingWindow")),
                    engineWindow.unreflect(window.getMethod("getIncomingWindow")),
                    engineWindow.unreflect(declared(window, "writeFlow", protonReceiver)));
            return hooks;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.warn("Cannot hook into the protonj2 engine ({}): this protonj2 is not the 1.1.0 the runtime was built "
                    + "for. Falling back to a periodic credit check (see creditCheckInterval).", Errors.describe(e));
            return OFF;
        }
    }

    private static VarHandle engineDelivery() {
        try {
            Class<?> type = Class.forName("org.apache.qpid.protonj2.client.impl.ClientDeliverable");
            return MethodHandles.privateLookupIn(type, MethodHandles.lookup())
                    .findVarHandle(type, "delivery", IncomingDelivery.class);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.warn("Cannot tell deliveries of a lost connection from live ones below protonj2's client API ({}); "
                    + "the runtime relies on protonj2's interruption event alone", Errors.describe(e));
            return null;
        }
    }

    private static Class<?> clientDeliverable() {
        try {
            return Class.forName("org.apache.qpid.protonj2.client.impl.ClientDeliverable");
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /**
     * Whether a delivery came over a connection that has failed. protonj2 tells the client of an interruption on
     * another thread, a little later; until then the delivery's own engine already knows. Any outcome for it would be
     * dropped (protonj2 logs {@code EngineShutdownException} and reports it settled), and the broker has taken the
     * message back. Works whether or not the credit hooks are turned off.
     *
     * @param delivery a delivery from a protonj2 receiver
     * @return true if its connection's engine has failed or shut down; false if alive or unknown
     */
    static boolean connectionLost(org.apache.qpid.protonj2.client.Delivery delivery) {
        IncomingDelivery incoming = engineDelivery(delivery);
        if (incoming == null) {
            return false;
        }
        try {
            org.apache.qpid.protonj2.engine.Engine engine = incoming.getLink().getEngine();
            return engine.isFailed() || engine.isShutdown();
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * @param delivery a delivery from a protonj2 receiver
     * @return the engine delivery behind it, or null if it cannot be read (another protonj2 version or type)
     */
    static IncomingDelivery engineDelivery(org.apache.qpid.protonj2.client.Delivery delivery) {
        if (ENGINE_DELIVERY == null || !CLIENT_DELIVERABLE.isInstance(delivery)) {
            return null;
        }
        try {
            return (IncomingDelivery) ENGINE_DELIVERY.getAcquire(delivery);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Whether a disposition for {@code delivery} can still be written: its engine has neither failed nor shut down,
     * and its link, session and connection are open at both ends. Only meaningful on the connection's I/O thread, the
     * one thread that changes these states (a transport error fails the engine there).
     */
    private static boolean writable(IncomingDelivery delivery) {
        org.apache.qpid.protonj2.engine.Receiver link = delivery.getLink();
        org.apache.qpid.protonj2.engine.Engine engine = link.getEngine();
        if (engine.isFailed() || engine.isShutdown()) {
            return false;
        }
        org.apache.qpid.protonj2.engine.Session session = link.getSession();
        org.apache.qpid.protonj2.engine.Connection connection = link.getConnection();
        return link.isLocallyOpen() && link.isRemotelyOpen() && session.isLocallyOpen() && session.isRemotelyOpen()
                && connection.isLocallyOpen() && connection.isRemotelyOpen();
    }

    private static String linkName(IncomingDelivery delivery) {
        try {
            return delivery.getLink().getName();
        } catch (RuntimeException e) {
            return "?";
        }
    }

    private static java.lang.reflect.Method declared(Class<?> type, String name, Class<?>... parameters)
            throws NoSuchMethodException {
        java.lang.reflect.Method m = type.getDeclaredMethod(name, parameters);
        m.setAccessible(true);
        return m;
    }

    /**
     * Reads {@value #DISABLE_PROPERTY}; called once per consumer, which keeps what it got.
     *
     * @return the hooks, or an instance that is not {@link #available()} (turned off, or not loadable)
     */
    static EngineHooks get() {
        return "false".equalsIgnoreCase(System.getProperty(DISABLE_PROPERTY)) ? OFF : INSTANCE;
    }

    /** @return whether the hooks can be installed (they loaded and were not turned off by {@value #DISABLE_PROPERTY}) */
    boolean available() {
        return available;
    }

    /**
     * Hooks one receiver. Call after every (re)attach; the handlers go on at once, on the receiver's I/O thread.
     *
     * @param receiver a protonj2 client receiver
     * @param listener where events go
     * @return the handle through which credit is granted and drained
     */
    Hooked install(Receiver receiver, Listener listener) {
        Hooked hooked = new Hooked(receiver, listener);
        remotelyClosed.setVolatile(receiver, (Consumer<Object>) r -> {
            org.apache.qpid.protonj2.types.transport.ErrorCondition error = hooked.engine().getRemoteCondition();
            String condition = error == null || error.getCondition() == null ? null : error.getCondition().toString();
            listener.closedByPeer(condition, error == null ? null : error.getDescription());
        });
        hooked.onIoThread(hooked::wrap);
        return hooked;
    }

    /** What became of a disposition handed to {@link Hooked#settle}. */
    enum Handover {
        /** Queued on the I/O thread, which writes it or drops it. */
        QUEUED,
        /** The I/O thread refused the task: nothing will be written. */
        REFUSED,
        /** The engine delivery cannot be read: settle through protonj2's client API instead. */
        UNSUPPORTED
    }

    /** The hooks of one link incarnation. Counters are confined to the I/O thread. */
    final class Hooked {
        private final Receiver receiver;
        private final Listener listener;
        private final Scheduler io;
        private Object window;         // the session's incoming window (engine), looked up once per install
        private int events;           // arrivals and aborts since install
        private int drainCredit = -1; // credit when the pending drain started, -1 if none
        private int drainEvents;
        private int credit;           // the engine's credit after the last event the hooks saw

        private Hooked(Receiver receiver, Listener listener) {
            this.receiver = receiver;
            this.listener = listener;
            this.io = (Scheduler) executor.get(receiver);
        }

        private org.apache.qpid.protonj2.engine.Receiver engine() {
            return (org.apache.qpid.protonj2.engine.Receiver) protonReceiver.getVolatile(receiver);
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
         * Settles a delivery of this receiver with {@code state}, as a task on the connection's I/O thread, and returns
         * at once. The task first checks, there, that the delivery's engine and link are still alive: a connection
         * that failed after the hand-over (protonj2 fails the engine on the I/O thread, so a saturated I/O thread can
         * fail it while the task waits in its queue) makes the task drop the disposition, log it at DEBUG and run
         * {@code dropped}, instead of letting the engine throw {@code EngineShutdownException}. This is what protonj2's
         * {@code accept()} does outside a transaction (a settled disposition through the session's no-op transaction
         * context), minus its credit top-up, which is off: the runtime opens receivers with credit window 0.
         *
         * @param delivery a delivery from this receiver
         * @param state the outcome
         * @param dropped runs on the I/O thread if the disposition was dropped there; must not block
         * @return {@link Handover#QUEUED}; {@link Handover#REFUSED} if the I/O thread takes no more tasks (the
         *     connection is closed); {@link Handover#UNSUPPORTED} if the engine delivery cannot be read (use the
         *     client API)
         */
        Handover settle(org.apache.qpid.protonj2.client.Delivery delivery,
                        org.apache.qpid.protonj2.types.transport.DeliveryState state, Runnable dropped) {
            IncomingDelivery incoming = engineDelivery(delivery);
            if (incoming == null) {
                return Handover.UNSUPPORTED;
            }
            try {
                io.execute(() -> {
                    String why;
                    try {
                        if (writable(incoming)) {
                            incoming.disposition(state, true);
                            return;
                        }
                        why = "its connection or link was gone when the I/O thread came to write it";
                    } catch (RuntimeException e) {
                        why = Errors.describe(e);
                    }
                    LOG.debug("Disposition {} on link '{}' dropped: {}", state, linkName(incoming), why);
                    dropped.run();
                });
                return Handover.QUEUED;
            } catch (java.util.concurrent.RejectedExecutionException e) {
                return Handover.REFUSED;
            }
        }

        /** Drains the link; the answer goes to {@link Listener#drained}. */
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

        @SuppressWarnings("unchecked")
        private void wrap() {
            org.apache.qpid.protonj2.engine.Receiver engine = engine();
            window = window(engine);
            EventHandler<IncomingDelivery> read = unwrap((EventHandler<IncomingDelivery>) readHandler.get(engine));
            EventHandler<IncomingDelivery> aborted =
                    unwrap((EventHandler<IncomingDelivery>) abortedHandler.get(engine));
            EventHandler<org.apache.qpid.protonj2.engine.Receiver> credit =
                    unwrap((EventHandler<org.apache.qpid.protonj2.engine.Receiver>) creditHandler.get(engine));
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
         * In front of protonj2's read handler: a completed delivery that the link had no credit left for (and that
         * the broker did not settle) is released and settled here and never reaches the client's queue; every other
         * frame goes to protonj2. Runs before the credit is read again, so {@code credit} is still what the link had
         * before this transfer.
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
                // (pooled, often direct memory) goes back to its pool. Only claiming the bytes would leave the buffer
                // with the settled delivery, never freed: a 1,000,000-message RabbitMQ soak ran out of direct memory.
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
                Object window = Hooked.this.window;
                int before = window == null ? -1 : size(window);
                if (original != null) {
                    original.handle(target);
                }
                after.handle(target);
                if (window != null && (before == 0 || size(window) == 0)) {
                    org.apache.qpid.protonj2.engine.Receiver engine = engine();
                    reopen(engine, window, size(window) == 0 ? null : engine);
                }
            }
        }

        /** @return protonj2's own handler under the wrappers of an earlier install (of this link or another) */
        @SuppressWarnings("unchecked")
        private <T> EventHandler<T> unwrap(EventHandler<T> handler) {
            while (true) {
                if (handler instanceof Hooked.Composite<?> c) {
                    handler = (EventHandler<T>) c.original;
                } else if (handler instanceof Hooked.CreditGate g) {
                    handler = (EventHandler<T>) g.original;
                } else {
                    return handler;
                }
            }
        }
    }

    private Object window(org.apache.qpid.protonj2.engine.Receiver engine) {
        try {
            return sessionWindow.invoke(engine.getSession());
        } catch (Throwable e) {
            return null;
        }
    }

    private int size(Object window) {
        try {
            return (int) windowSize.invoke(window);
        } catch (Throwable e) {
            return -1;
        }
    }

    /**
     * The session window is closed, or protonj2 has just re-opened it with a flow naming one link only: write a flow
     * for every other link of the session that still has credit, so that every link waiting on the shared window is
     * woken (a broker that re-evaluates only the link a flow names would strand the others: QPID-8751).
     */
    private void reopen(org.apache.qpid.protonj2.engine.Receiver self, Object window,
                        org.apache.qpid.protonj2.engine.Receiver except) {
        for (org.apache.qpid.protonj2.engine.Receiver link : self.getSession().receivers()) {
            if (link != except && link.isLocallyOpen() && link.isRemotelyOpen() && link.getCredit() > 0) {
                try {
                    writeFlow.invoke(window, link);
                } catch (Throwable e) {
                    LOG.debug("Re-opening the session window for a link failed: {}", Errors.describe(e));
                }
            }
        }
    }
}

package org.acemq.amqp.consumer.internal.engine;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.internal.Errors;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.engine.EventHandler;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.apache.qpid.protonj2.engine.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reflective handles into protonj2 1.1.0's {@code client.impl} and {@code engine.impl} types that the
 * {@link LinkHooks} need (the jars are automatic modules, whose packages are open): a client receiver's engine link,
 * its I/O thread and its remote-close handler, an engine link's read, abort and credit handlers, and a session's
 * incoming window. Loaded once; {@link #load()} is null if this protonj2 lacks any of them.
 */
final class EngineAccess {

    private static final Logger LOG = LoggerFactory.getLogger(EngineAccess.class);

    private final VarHandle protonReceiver;
    private final VarHandle executor;
    private final VarHandle remotelyClosed;
    private final VarHandle readHandler;
    private final VarHandle abortedHandler;
    private final VarHandle creditHandler;
    private final MethodHandle sessionWindow;
    private final MethodHandle windowSize;
    private final MethodHandle writeFlow;

    private EngineAccess(VarHandle protonReceiver, VarHandle executor, VarHandle remotelyClosed,
                         VarHandle readHandler, VarHandle abortedHandler, VarHandle creditHandler,
                         MethodHandle sessionWindow, MethodHandle windowSize, MethodHandle writeFlow) {
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

    /** @return the handles, or null (logged once) if this protonj2 is not the 1.1.0 the runtime was built for */
    static EngineAccess load() {
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
            return new EngineAccess(
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
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.warn("Cannot hook into the protonj2 engine ({}): this protonj2 is not the 1.1.0 the runtime was built "
                    + "for. Falling back to a periodic credit check (see creditCheckInterval).", Errors.describe(e));
            return null;
        }
    }

    private static java.lang.reflect.Method declared(Class<?> type, String name, Class<?>... parameters)
            throws NoSuchMethodException {
        java.lang.reflect.Method m = type.getDeclaredMethod(name, parameters);
        m.setAccessible(true);
        return m;
    }

    /** @return the engine link behind a client receiver (protonj2 replaces it when it re-creates the link) */
    org.apache.qpid.protonj2.engine.Receiver engine(Receiver receiver) {
        return (org.apache.qpid.protonj2.engine.Receiver) protonReceiver.getVolatile(receiver);
    }

    /** @return the connection's I/O thread, as the client receiver knows it */
    Scheduler ioThread(Receiver receiver) {
        return (Scheduler) executor.get(receiver);
    }

    /** Replaces the client's handler for the peer detaching or closing the link. */
    void onRemoteClose(Receiver receiver, Consumer<Object> handler) {
        remotelyClosed.setVolatile(receiver, handler);
    }

    @SuppressWarnings("unchecked")
    EventHandler<IncomingDelivery> readHandler(org.apache.qpid.protonj2.engine.Receiver engine) {
        return (EventHandler<IncomingDelivery>) readHandler.get(engine);
    }

    @SuppressWarnings("unchecked")
    EventHandler<IncomingDelivery> abortedHandler(org.apache.qpid.protonj2.engine.Receiver engine) {
        return (EventHandler<IncomingDelivery>) abortedHandler.get(engine);
    }

    @SuppressWarnings("unchecked")
    EventHandler<org.apache.qpid.protonj2.engine.Receiver> creditHandler(
            org.apache.qpid.protonj2.engine.Receiver engine) {
        return (EventHandler<org.apache.qpid.protonj2.engine.Receiver>) creditHandler.get(engine);
    }

    /** @return the incoming window of the link's session, or null if it cannot be read */
    Object window(org.apache.qpid.protonj2.engine.Receiver engine) {
        try {
            return sessionWindow.invoke(engine.getSession());
        } catch (Throwable e) {
            return null;
        }
    }

    /** @return the window's size, or -1 if it cannot be read */
    int size(Object window) {
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
    void reopen(org.apache.qpid.protonj2.engine.Receiver self, Object window,
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

package org.acemq.amqp.consumer.internal.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.acemq.amqp.consumer.internal.Errors;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine delivery behind a protonj2 client delivery, read through protonj2 1.1.0's {@code ClientDeliverable}, and
 * what it tells about the connection: whether that has failed before protonj2's client reports it, and whether a
 * disposition can still be written. Works whether or not the credit hooks are turned off.
 */
final class EngineDeliveries {

    private static final Logger LOG = LoggerFactory.getLogger(EngineDeliveries.class);
    /** protonj2's {@code ClientDeliverable.delivery} (the engine delivery behind a client one), or null. */
    private static final VarHandle ENGINE_DELIVERY = engineDelivery();
    private static final Class<?> CLIENT_DELIVERABLE = ENGINE_DELIVERY == null ? null : clientDeliverable();

    private EngineDeliveries() {
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
     * message back.
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
    static boolean writable(IncomingDelivery delivery) {
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

    /** @return the name of the delivery's link, or {@code ?} if it cannot be read */
    static String linkName(IncomingDelivery delivery) {
        try {
            return delivery.getLink().getName();
        } catch (RuntimeException e) {
            return "?";
        }
    }
}

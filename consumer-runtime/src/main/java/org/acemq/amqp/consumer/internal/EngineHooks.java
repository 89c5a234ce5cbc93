package org.acemq.amqp.consumer.internal;

import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.engine.IncomingDelivery;

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
 * queue ({@link LinkHooks#settle}) instead of handing it to a shut-down engine.
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
 * <p>Reflection reaches {@code client.impl} and {@code engine.impl} types ({@link EngineAccess} for the hooks,
 * {@link EngineDeliveries} for a delivery's engine; the jars are automatic modules, whose packages are open). If anything is missing (another protonj2 version) {@link #available()} is false, that is logged
 * once, and the runtime falls back to its periodic credit check. Setting the system property
 * {@value #DISABLE_PROPERTY} to {@code false} turns the hooks off (for diagnosis, and for tests of the fallback) for
 * the consumers built while it is set: it is read once per consumer, by {@link #get()}, never per link or delivery.
 *
 * <p>A link's handlers are replaced by protonj2 whenever it re-creates the link (every reconnect attempt), so
 * {@link #install} is called after every (re)attach; installing twice is harmless. Each install also puts
 * {@link WholeFrames} in front of the connection's frame decoder (once per engine), a workaround for a protonj2 1.1.0
 * composite-buffer bug that fails the connection on a frame split over three or more socket reads.
 */
final class EngineHooks {

    /** System property: {@code false} turns the engine hooks off. */
    static final String DISABLE_PROPERTY = "acemq.engineHooks";

    /** Hooks that are not {@link #available()}: turned off, or this protonj2 lacks what they need. */
    private static final EngineHooks OFF = new EngineHooks(null);
    private static final EngineHooks INSTANCE = new EngineHooks(EngineAccess.load());

    /** What the hooks report, on the connection's I/O thread. Implementations must not block. */
    interface Listener extends HookEvents {
    }

    /** The reflective handles, or null if the hooks are not available. */
    private final EngineAccess access;

    private EngineHooks(EngineAccess access) {
        this.access = access;
    }

    /**
     * Whether a delivery came over a connection that has failed (see {@link EngineDeliveries#connectionLost}). Works
     * whether or not the credit hooks are turned off.
     *
     * @param delivery a delivery from a protonj2 receiver
     * @return true if its connection's engine has failed or shut down; false if alive or unknown
     */
    static boolean connectionLost(org.apache.qpid.protonj2.client.Delivery delivery) {
        return EngineDeliveries.connectionLost(delivery);
    }

    /**
     * @param delivery a delivery from a protonj2 receiver
     * @return the engine delivery behind it, or null if it cannot be read (another protonj2 version or type)
     */
    static IncomingDelivery engineDelivery(org.apache.qpid.protonj2.client.Delivery delivery) {
        return EngineDeliveries.engineDelivery(delivery);
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
        return access != null;
    }

    /**
     * Hooks one receiver. Call after every (re)attach; the handlers go on at once, on the receiver's I/O thread.
     *
     * @param receiver a protonj2 client receiver
     * @param listener where events go
     * @return the handle through which credit is granted and drained
     * @throws IllegalStateException if the hooks are not {@link #available()}
     */
    LinkHooks install(Receiver receiver, Listener listener) {
        if (access == null) {
            throw new IllegalStateException("The protonj2 engine hooks are not available (turned off with "
                    + DISABLE_PROPERTY + "=false, or this protonj2 lacks what they need): check available() first");
        }
        return LinkHooks.install(access, receiver, listener);
    }
}

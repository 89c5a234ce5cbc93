package org.acemq.amqp.consumer.internal.engine;

import java.util.Collection;
import org.acemq.amqp.consumer.Outcome;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.types.messaging.Section;

/**
 * Everything the runtime does below protonj2 1.1.0's client API, and the only way the rest of the runtime gets there.
 * This package is the one place that uses protonj2's engine ({@code engine}, {@code engine.impl}), its codec, its
 * client implementation ({@code client.impl}) and its transport types, by reflection where they are not public (the
 * jars are automatic modules, whose packages are open); {@code ArchitectureTest} keeps it so. Its classes are
 * package-private; this class, {@link HookedLink} and {@link HookEvents} are what it hands out. Reading this package is reading
 * everything an upgrade of protonj2 can break.
 *
 * <p>What it does, and why each is below the client API (docs/runtime.md tells the whole story):
 * <ul>
 *   <li><b>Engine hooks</b> ({@link #hook}, {@link LinkHooks}): handlers around protonj2's own on the connection's I/O thread that give
 *       back the credit of an aborted transfer (PROTON-1512's class), repair a session window closed by payload-less
 *       frames (QPID-8751's class), release deliveries a broker sends beyond the link credit (rabbitmq-server#2597),
 *       count a drain's unused credit exactly, and grant and drain without blocking; plus settled dispositions written
 *       in batches by tasks of the runtime's own on the I/O thread, which drop a disposition whose connection failed
 *       while it waited instead of handing it to a shut-down engine. Each install also puts a frame assembler in front
 *       of protonj2's frame decoder (a protonj2 1.1.0 composite-buffer bug fails the connection on a frame split over
 *       three or more socket reads). The hooks can be turned off ({@value #DISABLE_PROPERTY}{@code =false}) and are
 *       off if this protonj2 lacks what they need; {@link #hooksAvailable()} says which.</li>
 *   <li><b>A delivery's connection</b> ({@link #connectionLost}): whether the engine a delivery arrived on has failed,
 *       which protonj2 tells the client only later, on another thread.</li>
 *   <li><b>A delivery's payload in one piece</b> ({@link #wholePayload}): the same composite-buffer bug one level up,
 *       for messages of several transfer frames.</li>
 *   <li><b>The codec</b> ({@link #decode}, {@link #encodeSections}): decoding an encoded message (an outbox entry) and
 *       encoding body sections, which the client API does not offer.</li>
 * </ul>
 * Each of them says once (WARN) when this protonj2 lacks what it needs, and the runtime goes on without it.
 */
public final class ProtonInternals {

    /**
     * System property: {@code false} turns the engine hooks off (for diagnosis, and for tests of the fallback) for the
     * consumers built while it is set. Read once per consumer, by {@link #forConsumer()}.
     */
    public static final String DISABLE_PROPERTY = "acemq.engineHooks";

    /** protonj2's frame logger: at TRACE it logs the SASL init frame, with a PLAIN password or a token in it. */
    public static final String FRAME_LOGGER = "org.apache.qpid.protonj2.engine.impl.ProtonFrameLoggingHandler";

    /** Internals whose hooks are not available: turned off, or this protonj2 lacks what they need. */
    private static final ProtonInternals OFF = new ProtonInternals(null);
    private static final ProtonInternals LOADED = new ProtonInternals(EngineAccess.load());

    /**
     * Reads {@value #DISABLE_PROPERTY}; called once per consumer, which keeps what it got.
     *
     * @return the internals, with the engine hooks {@linkplain #hooksAvailable() available} unless turned off or not
     *     loadable
     */
    public static ProtonInternals forConsumer() {
        return "false".equalsIgnoreCase(System.getProperty(DISABLE_PROPERTY)) ? OFF : LOADED;
    }

    /** The reflective handles of the hooks, or null if they are not available. */
    private final EngineAccess access;

    private ProtonInternals(EngineAccess access) {
        this.access = access;
    }

    /** @return whether {@link #hook} can be used: the hooks loaded and were not turned off */
    public boolean hooksAvailable() {
        return access != null;
    }

    /**
     * Hooks one receiver. Call after every (re)attach: protonj2 replaces a link's handlers whenever it re-creates the
     * link (every reconnect attempt); hooking twice is harmless. The handlers go on at once, on the receiver's I/O
     * thread.
     *
     * @param receiver a protonj2 client receiver, opened with credit window 0 (the runtime grants all credit)
     * @param events where the link's events go
     * @return the handle through which credit is granted and drained and deliveries are settled
     * @throws IllegalStateException if the hooks are not {@linkplain #hooksAvailable() available}
     */
    public HookedLink hook(Receiver receiver, HookEvents events) {
        if (access == null) {
            throw new IllegalStateException("The protonj2 engine hooks are not available (turned off with "
                    + DISABLE_PROPERTY + "=false, or this protonj2 lacks what they need): check hooksAvailable() "
                    + "first");
        }
        return LinkHooks.install(access, receiver, events);
    }

    /**
     * Whether a delivery came over a connection that has failed. protonj2 tells the client of an interruption on
     * another thread, a little later; until then the delivery's own engine already knows. Any outcome for it would be
     * dropped (protonj2 logs {@code EngineShutdownException} and reports it settled), and the broker has taken the
     * message back. Works whether or not the hooks are available.
     *
     * @param delivery a delivery from a protonj2 receiver
     * @return true if its connection's engine has failed or shut down; false if alive or unknown
     */
    public static boolean connectionLost(Delivery delivery) {
        return EngineDeliveries.connectionLost(delivery);
    }

    /**
     * Makes a delivery's encoded message one piece if it is a composite of several (the frames' payloads), so that
     * protonj2 can decode it; call on the thread that then decodes it, before {@code message()}. Works whether or not
     * the hooks are available.
     *
     * @param delivery a delivery from a protonj2 receiver, not decoded yet
     * @return its encoded message (readable from its read offset, one piece), or null if it cannot be read: another
     *     protonj2 version or delivery type, or already decoded
     */
    public static ProtonBuffer wholePayload(Delivery delivery) {
        return WholePayload.of(delivery);
    }

    /**
     * @param encoded an AMQP message as it goes on the wire (its sections, one after the other)
     * @return it, decoded by protonj2's client (delivery annotations are dropped, as for a received message)
     * @throws ClientException if the bytes are not an AMQP message
     */
    public static Message<?> decode(byte[] encoded) throws ClientException {
        return Codec.decode(encoded);
    }

    /**
     * @param sections body sections, as a decoded message holds them
     * @return them encoded one after the other by protonj2's default encoder, in a new heap buffer
     */
    public static ProtonBuffer encodeSections(Collection<Section<?>> sections) {
        return Codec.encodeSections(sections);
    }
}

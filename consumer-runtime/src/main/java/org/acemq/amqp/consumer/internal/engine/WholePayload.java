package org.acemq.amqp.consumer.internal.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.acemq.amqp.consumer.internal.Errors;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.buffer.ProtonBufferAllocator;
import org.apache.qpid.protonj2.buffer.ProtonCompositeBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands protonj2's message decoder a delivery's encoded message in one piece: a workaround for a bug in protonj2
 * 1.1.0's composite buffer, at the level of a delivery (see {@link WholeFrames} for the same bug at the level of a
 * frame).
 *
 * <p>protonj2 keeps the payload of a delivery that arrived in several transfer frames as a
 * {@code ProtonCompositeBuffer} of the frames' payloads, and decodes the message from it the first time
 * {@code Delivery.message()} is called. That buffer's {@code copy(index, length, readOnly)}, which the decoder uses for
 * every binary and symbol it reads, counts the bytes left in the piece where the copy starts from the absolute
 * {@code index} instead of the offset within that piece. A binary or symbol that starts in the second or a later frame
 * of a message with more frames after it therefore slices the next piece at a negative offset
 * ({@code IndexOutOfBoundsException: index: -N, length: 0}), and the message cannot be decoded although the broker
 * delivered it whole: a map or list body spread over three frames or more, application properties or message
 * annotations over about 70 KiB with 16 KiB frames. The same code is in protonj2's main branch.
 *
 * <p>{@link #of} is called before the message is decoded. A payload of several pieces is copied into one buffer, which
 * then takes the pieces' place inside the same composite (so the client's delivery decodes, caches and releases it as
 * it would have the pieces); the pieces are released at once. A payload of one frame is left as it is: the cost there
 * is a field read and a type check. For a message of several frames it is one copy of its bytes.
 *
 * <p>Call it on the thread that then decodes the delivery, before {@code message()}; protonj2's delivery is not
 * thread-safe either.
 */
final class WholePayload {

    private static final Logger LOG = LoggerFactory.getLogger(WholePayload.class);
    private static final String CLIENT_DELIVERY = "org.apache.qpid.protonj2.client.impl.ClientDelivery";
    /** protonj2's {@code ClientDelivery.payload}: the delivery's encoded message, or null if it cannot be read. */
    private static final VarHandle PAYLOAD = payloadHandle();
    private static final Class<?> TYPE = PAYLOAD == null ? null : type();

    private WholePayload() {
    }

    private static VarHandle payloadHandle() {
        try {
            Class<?> type = Class.forName(CLIENT_DELIVERY);
            return MethodHandles.privateLookupIn(type, MethodHandles.lookup())
                    .findVarHandle(type, "payload", ProtonBuffer.class);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.warn("Cannot read protonj2's delivery payload ({}): messages of several transfer frames may fail to "
                    + "decode (a protonj2 1.1.0 composite-buffer bug), and fingerprints of structured bodies are "
                    + "computed from the decoded message", Errors.describe(e));
            return null;
        }
    }

    private static Class<?> type() {
        try {
            return Class.forName(CLIENT_DELIVERY);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /**
     * Makes the delivery's encoded message contiguous if it is a composite of several pieces.
     *
     * @param delivery a delivery from a protonj2 receiver, not decoded yet
     * @return its encoded message (readable from its read offset, one piece), or null if it cannot be read: another
     *     protonj2 version or delivery type, or already decoded
     */
    static ProtonBuffer of(org.apache.qpid.protonj2.client.Delivery delivery) {
        if (TYPE == null || !TYPE.isInstance(delivery)) {
            return null;
        }
        ProtonBuffer payload;
        try {
            payload = (ProtonBuffer) PAYLOAD.get(delivery);
        } catch (RuntimeException e) {
            return null;
        }
        if (payload == null || payload.isClosed() || !payload.isReadable()) {
            return null;
        }
        if (payload instanceof ProtonCompositeBuffer composite && composite.componentCount() > 1) {
            join(composite);
        }
        return payload;
    }

    /** Replaces the composite's pieces by one buffer holding its readable bytes; visible for tests. */
    static void join(ProtonCompositeBuffer composite) {
        int length = composite.getReadableBytes();
        ProtonBuffer whole = ProtonBufferAllocator.defaultAllocator().allocateHeapBuffer(length);
        composite.copyInto(composite.getReadOffset(), whole, 0, length);
        whole.setWriteOffset(length);
        // a split at the capacity takes every piece out and leaves the composite empty but open; closing the pieces
        // releases the frames' buffers
        composite.split(composite.capacity()).close();
        composite.append(whole.convertToReadOnly());
    }
}

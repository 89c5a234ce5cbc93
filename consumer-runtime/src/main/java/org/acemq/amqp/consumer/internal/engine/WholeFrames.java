package org.acemq.amqp.consumer.internal.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.acemq.amqp.consumer.internal.Errors;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.engine.Engine;
import org.apache.qpid.protonj2.engine.EngineHandler;
import org.apache.qpid.protonj2.engine.EngineHandlerContext;
import org.apache.qpid.protonj2.engine.impl.ProtonConstants;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands protonj2's frame decoder whole frames only: a workaround for a bug in protonj2 1.1.0's composite buffer.
 *
 * <p>When a frame arrives split over several socket reads, protonj2's decoder collects the pieces in a
 * {@code ProtonCompositeBufferImpl} and decodes the frame from it. That buffer's {@code copy(index, length, readOnly)}
 * (used for every symbol and binary the decoder reads, such as a delivery tag or the symbol descriptors protonj2's test
 * peer writes) counts the bytes left to copy from the absolute {@code index} instead of the offset inside the piece
 * where the copy starts. A copy that starts in the second or a later piece of a frame that has more pieces after the
 * copied value therefore walks on into those pieces and slices them at a negative offset: Netty throws
 * {@code IndexOutOfBoundsException: index: -30701, length: 0 (expected: range(0, 2111))}, the engine fails and the
 * connection is lost. So a frame that a socket read boundary cuts within its first bytes, and that spans three reads or
 * more, kills the connection (a 32 KiB transfer now and then; the same code in the protonj2 main branch).
 *
 * <p>This handler sits in front of the decoder in the engine's pipeline. A read holding only whole frames goes on
 * untouched; a frame that a read leaves incomplete is copied into one buffer of the frame's size and handed on once it
 * is complete, so the decoder never builds a composite. The byte stream is understood as AMQP frames (a four-byte size
 * first) and protocol headers (eight bytes starting {@code AMQP}, which as a frame size would be over 1 GiB); anything
 * else (a size below 8 or above the connection's max-frame-size) turns the handler into a plain pass-through and the decoder
 * reports the error as before.
 *
 * <p>Confined to the connection's I/O thread, like the engine. Installed after each link (re)attach ({@link #install});
 * it must start at a frame boundary, so it is only installed when the decoder is at one or in the middle of buffering a
 * frame whose missing byte count it can read (it then passes that many bytes through first).
 */
final class WholeFrames implements EngineHandler {

    private static final Logger LOG = LoggerFactory.getLogger(WholeFrames.class);
    /** The name in the engine's pipeline. */
    static final String NAME = "acemq-whole-frames";
    private static final int HEADER_BYTES = 8;
    private static final int AMQP = 0x414D5150; // "AMQP": a protocol header, not a frame size
    private static final Decoder DECODER = Decoder.load();

    private final Engine engine;
    private int passThrough;     // bytes of a frame the decoder had begun before this handler was installed
    private boolean off;         // the stream is not understood: pass everything through
    private ProtonBuffer partial; // the frame (or header) a read left incomplete, or null
    private int missing;         // bytes it still needs; 0 while its size is not known yet
    private final byte[] sizeBytes = new byte[4];
    private int sizeRead;        // bytes of the next frame's size seen so far, when a read cut the size itself

    WholeFrames(Engine engine, int passThrough) {
        this.engine = engine;
        this.passThrough = passThrough;
    }

    /**
     * Installs the handler in front of the engine's frame decoder unless it is there already. Call on the engine's
     * I/O thread, between reads.
     *
     * @return whether the handler is in the pipeline now
     */
    static boolean install(Engine engine) {
        if (engine.pipeline().find(NAME) != null) {
            return true;
        }
        int passThrough = DECODER == null ? -1 : DECODER.bytesBeforeNextFrame(engine);
        if (passThrough < 0) {
            LOG.debug("Frame assembly not installed: the frame decoder is not at a frame boundary it can tell");
            return false;
        }
        engine.pipeline().addLast(NAME, new WholeFrames(engine, passThrough));
        LOG.debug("Frame assembly installed in front of protonj2's frame decoder ({} bytes of a begun frame first)",
                passThrough);
        return true;
    }

    @Override
    public void handleRead(EngineHandlerContext context, ProtonBuffer input) {
        if (passThrough > 0) {
            int n = Math.min(passThrough, input.getReadableBytes());
            passThrough -= n;
            if (n == input.getReadableBytes()) {
                context.fireRead(input);
                return;
            }
            try (ProtonBuffer front = input.readSplit(n)) {
                context.fireRead(front);
            }
        }
        if (off) {
            context.fireRead(input);
            return;
        }
        if (partial != null || sizeRead > 0) {
            if (!complete(context, input)) {
                return;
            }
        }
        int start = input.getReadOffset();
        int end = input.getWriteOffset();
        int pos = start;
        while (end - pos >= 4) {
            int length = frameLength(input.getInt(pos));
            if (length < 0) {
                off = true;
                break;
            }
            if (end - pos < length) {
                break;
            }
            pos += length;
        }
        if (off || pos == end) {
            context.fireRead(input); // whole frames only (or not understood): as it came
            return;
        }
        if (pos > start) {
            try (ProtonBuffer front = input.readSplit(pos - start)) {
                context.fireRead(front);
            }
        }
        begin(context, input);
    }

    /** Starts collecting the incomplete frame (or frame size) at the front of {@code input}, which it all takes. */
    private void begin(EngineHandlerContext context, ProtonBuffer input) {
        if (input.getReadableBytes() < 4) {
            while (input.isReadable()) {
                sizeBytes[sizeRead++] = input.readByte();
            }
            return;
        }
        int length = frameLength(input.getInt(input.getReadOffset()));
        partial = context.engine().configuration().getBufferAllocator().allocate(length);
        missing = length;
        take(input, input.getReadableBytes());
    }

    /** @return whether {@code input} has bytes left after completing the pending frame (which went on if complete) */
    private boolean complete(EngineHandlerContext context, ProtonBuffer input) {
        if (partial == null) {
            while (sizeRead < 4 && input.isReadable()) {
                sizeBytes[sizeRead++] = input.readByte();
            }
            if (sizeRead < 4) {
                return false;
            }
            int size = ((sizeBytes[0] & 0xFF) << 24) | ((sizeBytes[1] & 0xFF) << 16) | ((sizeBytes[2] & 0xFF) << 8)
                    | (sizeBytes[3] & 0xFF);
            sizeRead = 0;
            int length = frameLength(size);
            if (length < 0) {
                off = true;
                ProtonBuffer head = context.engine().configuration().getBufferAllocator().allocate(4)
                        .writeBytes(sizeBytes, 0, 4);
                try (head) {
                    context.fireRead(head.convertToReadOnly());
                }
                context.fireRead(input);
                return false;
            }
            partial = context.engine().configuration().getBufferAllocator().allocate(length);
            partial.writeBytes(sizeBytes, 0, 4);
            missing = length - 4;
        }
        take(input, Math.min(missing, input.getReadableBytes()));
        if (missing > 0) {
            return false;
        }
        ProtonBuffer whole = partial.convertToReadOnly();
        partial = null;
        try (whole) {
            context.fireRead(whole);
        }
        return input.isReadable();
    }

    private void take(ProtonBuffer input, int n) {
        input.copyInto(input.getReadOffset(), partial, partial.getWriteOffset(), n);
        input.advanceReadOffset(n);
        partial.advanceWriteOffset(n);
        missing -= n;
    }

    /** @return the length of what starts with these four bytes (a frame or a protocol header), -1 if not understood */
    private int frameLength(int size) {
        if (size == AMQP) {
            return HEADER_BYTES;
        }
        if (size < HEADER_BYTES || size > engine.connection().getMaxFrameSize()) {
            return -1;
        }
        return size;
    }

    @Override
    public void handlerRemoved(EngineHandlerContext context) {
        if (partial != null) {
            partial.close();
            partial = null;
        }
    }

    /** Reads, by reflection, where protonj2 1.1.0's frame decoder stands in the byte stream. */
    private static final class Decoder {
        private final VarHandle stage;
        private final VarHandle headerByte;
        private final VarHandle multiplier;
        private final VarHandle remaining;
        private final Class<?> headerStage;
        private final Class<?> sizeStage;
        private final Class<?> bufferingStage;

        private Decoder(VarHandle stage, VarHandle headerByte, VarHandle multiplier, VarHandle remaining,
                        Class<?> headerStage, Class<?> sizeStage, Class<?> bufferingStage) {
            this.stage = stage;
            this.headerByte = headerByte;
            this.multiplier = multiplier;
            this.remaining = remaining;
            this.headerStage = headerStage;
            this.sizeStage = sizeStage;
            this.bufferingStage = bufferingStage;
        }

        static Decoder load() {
            String decoder = "org.apache.qpid.protonj2.engine.impl.ProtonFrameDecodingHandler";
            try {
                Class<?> type = Class.forName(decoder);
                Class<?> stageType = Class.forName(decoder + "$FrameParserStage");
                Class<?> header = Class.forName(decoder + "$HeaderParsingStage");
                Class<?> size = Class.forName(decoder + "$FrameSizeParsingStage");
                Class<?> buffering = Class.forName(decoder + "$FrameBufferingStage");
                MethodHandles.Lookup me = MethodHandles.lookup();
                return new Decoder(
                        MethodHandles.privateLookupIn(type, me).findVarHandle(type, "stage", stageType),
                        MethodHandles.privateLookupIn(header, me).findVarHandle(header, "headerByte", int.class),
                        MethodHandles.privateLookupIn(size, me).findVarHandle(size, "multiplier", int.class),
                        MethodHandles.privateLookupIn(buffering, me).findVarHandle(buffering,
                                "frameBytesRemaining", int.class),
                        header, size, buffering);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                LOG.warn("Cannot read protonj2's frame decoder ({}): frames split over three or more socket reads can "
                        + "fail the connection (a protonj2 1.1.0 composite-buffer bug)", Errors.describe(e));
                return null;
            }
        }

        /** @return bytes of the current frame the decoder still needs (0 at a boundary), -1 if it cannot tell */
        int bytesBeforeNextFrame(Engine engine) {
            try {
                Object handler = engine.pipeline().find(ProtonConstants.FRAME_DECODING_HANDLER);
                if (handler == null) {
                    return -1;
                }
                Object current = stage.get(handler);
                if (headerStage.isInstance(current)) {
                    return (int) headerByte.get(current) == 0 ? 0 : -1;
                }
                if (sizeStage.isInstance(current)) {
                    return (int) multiplier.get(current) == 4 ? 0 : -1;
                }
                if (bufferingStage.isInstance(current)) {
                    return (int) remaining.get(current);
                }
                return -1;
            } catch (RuntimeException e) {
                return -1;
            }
        }
    }
}

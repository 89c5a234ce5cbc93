package org.acemq.amqp.consumer.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.buffer.ProtonBufferAllocator;
import org.apache.qpid.protonj2.buffer.netty.Netty4ProtonBufferAllocator;
import org.apache.qpid.protonj2.engine.Connection;
import org.apache.qpid.protonj2.engine.Engine;
import org.apache.qpid.protonj2.engine.EngineFactory;
import org.apache.qpid.protonj2.engine.OutgoingDelivery;
import org.apache.qpid.protonj2.engine.Receiver;
import org.apache.qpid.protonj2.engine.Sender;
import org.apache.qpid.protonj2.engine.Session;
import org.junit.jupiter.api.Test;

/**
 * {@link WholeFrames} against two real protonj2 1.1.0 engines joined in memory: a sender engine plays the broker, and
 * the receiving engine is fed the broker's bytes the way protonj2's Netty transport feeds it (each "socket read" a
 * pooled Netty buffer wrapped read-only), cut wherever the test says.
 */
class WholeFramesTest {

    private static final Netty4ProtonBufferAllocator NETTY = new Netty4ProtonBufferAllocator(
            PooledByteBufAllocator.DEFAULT);
    private static final int PAYLOAD = 32 * 1024;

    /** A broker engine and a consumer engine, one link between them, the broker's unread output kept aside. */
    private static final class Link {
        final Engine broker = EngineFactory.PROTON.createNonSaslEngine();
        final Engine consumer = EngineFactory.PROTON.createNonSaslEngine();
        final ByteArrayOutputStream fromBroker = new ByteArrayOutputStream();
        final List<byte[]> fromConsumer = new ArrayList<>();
        final List<byte[]> received = new ArrayList<>();
        Sender sender;
        Receiver receiver;

        Link(boolean wholeFrames) {
            consumer.configuration().setBufferAllocator(NETTY);
            if (wholeFrames) {
                assertThat(WholeFrames.install(consumer)).isTrue();
            }
            broker.outputConsumer(b -> fromBroker.writeBytes(bytes(b)));
            consumer.outputConsumer(b -> {
                try (b) {
                    fromConsumer.add(bytes(b));
                }
            });

            Connection server = broker.start();
            server.openHandler(c -> c.open());
            server.sessionOpenHandler(Session::open);
            server.senderOpenHandler(s -> {
                sender = s;
                s.open();
            });

            Connection client = consumer.start().open();
            Session session = client.session().open();
            receiver = session.receiver("orders").open();
            receiver.deliveryReadHandler(d -> {
                if (!d.isPartial()) {
                    try (ProtonBuffer payload = d.readAll()) {
                        received.add(bytes(payload));
                    }
                    d.disposition(org.apache.qpid.protonj2.types.messaging.Accepted.getInstance(), true);
                }
            });
            pump();
            assertThat(sender).as("the broker's sender link").isNotNull();
        }

        /** Carries every pending byte both ways, each batch as one read, until both sides are quiet. */
        void pump() {
            while (fromBroker.size() > 0 || !fromConsumer.isEmpty()) {
                byte[] down = fromBroker.toByteArray();
                fromBroker.reset();
                if (down.length > 0) {
                    read(consumer, down, 0, down.length);
                }
                List<byte[]> up = new ArrayList<>(fromConsumer);
                fromConsumer.clear();
                for (byte[] b : up) {
                    broker.ingest(ProtonBufferAllocator.defaultAllocator().copy(b));
                }
            }
        }

        /** The broker sends {@code count} transfers of {@link #PAYLOAD} bytes; returns its bytes, not yet delivered. */
        byte[] send(int count) {
            receiver.addCredit(count);
            pump();
            for (int i = 0; i < count; i++) {
                OutgoingDelivery d = sender.next();
                d.setTag(new byte[] {(byte) i, (byte) (i >> 8), 7, 7});
                d.writeBytes(ProtonBufferAllocator.defaultAllocator().copy(payload(i)));
            }
            byte[] out = fromBroker.toByteArray();
            fromBroker.reset();
            return symbolicDescriptors(out);
        }
    }

    /**
     * Rewrites each frame's performative descriptor from its numeric code ({@code 0x00 0x53 <code>}) to the symbolic
     * one ({@code amqp:transfer:list} and so on), which is just as valid and is what protonj2's test peer writes: the
     * decoder then reads a symbol within a frame's first bytes, which is where protonj2 1.1.0's composite copy fails.
     */
    private static byte[] symbolicDescriptors(byte[] stream) {
        String[] names = {"open", "begin", "attach", "flow", "transfer", "disposition", "detach", "end", "close"};
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(stream);
        while (in.hasRemaining()) {
            int size = in.getInt(in.position());
            byte[] frame = new byte[size];
            in.get(frame);
            int code = frame[10] & 0xFF;
            assertThat(new byte[] {frame[8], frame[9]}).as("a small-ulong descriptor").containsExactly(0x00, 0x53);
            byte[] symbol = ("amqp:" + names[code - 0x10] + ":list").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            java.nio.ByteBuffer rewritten = java.nio.ByteBuffer.allocate(size - 3 + 3 + symbol.length);
            rewritten.putInt(rewritten.capacity()).put(frame, 4, 4).put((byte) 0x00).put((byte) 0xa3)
                    .put((byte) symbol.length).put(symbol).put(frame, 11, size - 11);
            out.writeBytes(rewritten.array());
        }
        return out.toByteArray();
    }

    private static byte[] payload(int i) {
        byte[] p = new byte[PAYLOAD];
        for (int j = 0; j < p.length; j++) {
            p[j] = (byte) (i * 31 + j);
        }
        return p;
    }

    private static byte[] bytes(ProtonBuffer b) {
        byte[] out = new byte[b.getReadableBytes()];
        b.readBytes(out, 0, out.length);
        return out;
    }

    /** One socket read as protonj2's TcpTransport hands it to the engine: a pooled buffer, wrapped read-only. */
    private static void read(Engine engine, byte[] stream, int from, int length) {
        ByteBuf read = PooledByteBufAllocator.DEFAULT.directBuffer(length);
        read.writeBytes(stream, from, length);
        try (ProtonBuffer wrapped = NETTY.wrap(read).convertToReadOnly()) {
            engine.ingest(wrapped);
        }
    }

    /** Feeds {@code stream} in reads that end at the given offsets (and one last read for the rest). */
    private static void readsEndingAt(Engine engine, byte[] stream, int... ends) {
        int from = 0;
        for (int end : ends) {
            read(engine, stream, from, end - from);
            from = end;
        }
        read(engine, stream, from, stream.length - from);
    }

    /**
     * The cause, kept as a test so that a protonj2 release that fixes it shows up. Two 32 KiB transfers; the first
     * read holds the first transfer and only the first 10 bytes of the second (its descriptor symbol starts in the
     * next read), the second read is short (300 bytes) and a third read holds the rest: protonj2's engine fails in
     * {@code ProtonCompositeBufferImpl.copy} while decoding the second transfer's descriptor, as it failed in
     * {@code WireBeyondCreditTest} ({@code index: -30701, length: 0 (expected: range(0, 2111))}).
     */
    @Test
    void withoutItProtonj2FailsOnATransferCutInItsFirstBytesThenSpreadOverTwoMoreReads() {
        Link link = new Link(false);
        byte[] stream = link.send(2);
        int first = stream.length / 2;

        assertThatThrownBy(() -> readsEndingAt(link.consumer, stream, first + 10, first + 10 + 300))
                .hasRootCauseInstanceOf(IndexOutOfBoundsException.class)
                .rootCause().satisfies(e -> assertThat(e.getStackTrace()).anyMatch(f -> f.getClassName()
                        .endsWith("ProtonCompositeBufferImpl") && f.getMethodName().equals("copy")));
        assertThat(link.consumer.isFailed()).as("protonj2 1.1.0's engine failed").isTrue();
        assertThat(link.received).hasSize(1);
    }

    @Test
    void theSameCutsGiveBothPayloadsWholeWhenFramesAreAssembledFirst() {
        Link link = new Link(true);
        byte[] stream = link.send(2);
        int first = stream.length / 2;

        readsEndingAt(link.consumer, stream, first + 10, first + 10 + 300);

        assertThat(link.consumer.isFailed()).isFalse();
        assertThat(link.received).hasSize(2);
        assertThat(link.received.get(0)).isEqualTo(payload(0));
        assertThat(link.received.get(1)).isEqualTo(payload(1));
    }

    /**
     * Every way of cutting: reads of random sizes from 1 byte to 3 frames, cuts inside frame sizes, headers and
     * payloads, several frames in one read; every transfer arrives whole and in order.
     */
    @Test
    void anyCuttingOfManyTransfersDeliversEveryPayloadWholeAndInOrder() {
        for (long seed = 1; seed <= 20; seed++) {
            Random random = new Random(seed);
            Link link = new Link(true);
            int count = 40;
            byte[] stream = link.send(count);
            int from = 0;
            while (from < stream.length) {
                int length = Math.min(stream.length - from, switch (random.nextInt(4)) {
                    case 0 -> 1 + random.nextInt(16);
                    case 1 -> 1 + random.nextInt(2_048);
                    case 2 -> 1 + random.nextInt(70_000);
                    default -> 1 + random.nextInt(120_000);
                });
                read(link.consumer, stream, from, length);
                from += length;
            }
            assertThat(link.consumer.isFailed()).as("seed %d: %s", seed, link.consumer.failureCause()).isFalse();
            assertThat(link.received).as("seed %d", seed).hasSize(count);
            for (int i = 0; i < count; i++) {
                assertThat(Arrays.equals(link.received.get(i), payload(i))).as("seed %d, payload %d", seed, i).isTrue();
            }
        }
    }

    /**
     * Installed while the decoder is buffering a frame, it lets the rest of that frame through untouched and takes
     * over from the next frame on.
     */
    @Test
    void installedInTheMiddleOfAFrameItTakesOverFromTheNextFrame() {
        Link link = new Link(false);
        byte[] stream = link.send(3);
        int oneFrame = stream.length / 3;

        read(link.consumer, stream, 0, 5_000); // the decoder now buffers the first frame
        assertThat(WholeFrames.install(link.consumer)).isTrue();
        // the rest of the first frame and the start of the second in one read, then the cuts of the test above
        readsEndingAt(link.consumer, Arrays.copyOfRange(stream, 5_000, stream.length), 2 * oneFrame - 5_000 + 10,
                2 * oneFrame - 5_000 + 10 + 300);

        assertThat(link.consumer.isFailed()).as("%s", link.consumer.failureCause()).isFalse();
        assertThat(link.received).hasSize(3);
        for (int i = 0; i < 3; i++) {
            assertThat(Arrays.equals(link.received.get(i), payload(i))).as("payload %d", i).isTrue();
        }
        assertThat(WholeFrames.install(link.consumer)).as("installing twice is harmless").isTrue();
    }

    /** A stream that is not AMQP frames (a size below 8) is passed through, and the decoder reports it as before. */
    @Test
    void aStreamItDoesNotUnderstandGoesThroughAsItCame() {
        Link link = new Link(true);
        byte[] garbage = {0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8};

        assertThatThrownBy(() -> read(link.consumer, garbage, 0, garbage.length))
                .hasMessageContaining("frame size 3 smaller than minimum");
        assertThat(link.consumer.isFailed()).isTrue();
    }
}

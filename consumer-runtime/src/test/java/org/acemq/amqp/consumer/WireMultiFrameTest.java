package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.expectGracefulClose;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testinfra.LargeMessages;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.AdvancedMessage;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.messaging.AmqpValue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Messages that come in many transfer frames, from a scripted peer that splits them exactly as a broker with small
 * frames does: the consumer advertises the max-frame-size it is configured with, decodes every such message (map and
 * list bodies with binaries and symbols after the first frame, large application properties and annotations, which
 * protonj2 1.1.0 alone cannot decode), and accepts it; an identical copy of such a message is a duplicate, never a
 * conflict, also when conflicts are rejected.
 */
@Timeout(30)
class WireMultiFrameTest {

    private static final int FRAME = 16 * 1024;
    /** Payload bytes per transfer: a frame less the transfer performative's header (generous). */
    private static final int CHUNK = FRAME - 256;

    private final List<Envelope> handled = new CopyOnWriteArrayList<>();
    private final RecordingObserver observer = new RecordingObserver();
    private final InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();

    @Test
    void theOpenCarriesTheConfiguredMaxFrameSizeAndTheDefaultIsSixtyFourKiB() throws Exception {
        for (Integer configured : new Integer[] {FRAME, null}) {
            try (ProtonTestServer peer = new ProtonTestServer()) {
                peer.expectSASLAnonymousConnect();
                peer.expectOpen().withMaxFrameSize(configured == null ? 65536 : configured).respond();
                peer.expectBegin().respond();
                peer.expectAttach().ofReceiver().respond();
                peer.expectFlow();
                peer.start();
                ConnectionSettings.Builder settings = ScriptedPeer.settings(peer);
                if (configured != null) {
                    settings.maxFrameSize(configured);
                }
                try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).connection(settings.build())
                        .subscribe(Subscription.builder("orders", handled::add).build()).start()) {
                    peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                    expectGracefulClose(peer, 0, 101);
                }
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void theMaxFrameSizeIsValidatedAndItsMessageNamesTheRuleAndTheValue() {
        assertThat(ConnectionSettings.builder("broker", 5672).build().maxFrameSize()).isEqualTo(65536);
        assertThat(ConnectionSettings.builder("broker", 5672).maxFrameSize(512).build().maxFrameSize()).isEqualTo(512);
        assertThat(ConnectionSettings.builder("broker", 5672).maxFrameSize(16 * 1024 * 1024).build().maxFrameSize())
                .isEqualTo(16 * 1024 * 1024);
        assertThatThrownBy(() -> ConnectionSettings.builder("broker", 5672).maxFrameSize(511))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxFrameSize must be between 512 and 16777216 bytes, but was 511");
        assertThatThrownBy(() -> ConnectionSettings.builder("broker", 5672).maxFrameSize(16 * 1024 * 1024 + 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was 16777217");
    }

    @Test
    void structuredBodiesAndLargeSectionsSpreadOverManyFramesAreDecodedAndAccepted() throws Exception {
        Map<String, Object> map = structured(200 * 1024);
        List<Object> list = new ArrayList<>(map.values());
        Message<Object> mapBody = Message.create((Object) map).messageId("map");
        Message<Object> listBody = AdvancedMessage.create().addBodySection(new AmqpValue<>(list)).messageId("list");
        Message<Object> sequence = Message.create((Object) list).messageId("sequence");
        Message<Object> properties = Message.create((Object) "small").messageId("properties");
        Message<Object> annotations = Message.create((Object) "small").messageId("annotations");
        for (int i = 0; properties.toAdvancedMessage().encode(null).getReadableBytes() < 120 * 1024; i++) {
            properties.property("p" + i, "v".repeat(900) + i);
            annotations.annotation("x-opt-a" + i, Symbol.valueOf("s" + i));
            annotations.annotation("x-opt-b" + i, "w".repeat(900) + i);
        }
        List<Message<Object>> messages = List.of(mapBody, listBody, sequence, properties, annotations);

        run(Subscription.builder("orders", handled::add), messages);

        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(messages.size());
        assertThat(handled).extracting(Envelope::messageId)
                .containsExactly("map", "list", "sequence", "properties", "annotations");
        assertThat(LargeMessages.same(handled.get(0).body(), map)).as("map body").isTrue();
        assertThat(LargeMessages.same(handled.get(1).body(), list)).as("amqp-value list body").isTrue();
        assertThat(LargeMessages.same(handled.get(2).body(), list)).as("amqp-sequence body").isTrue();
        assertThat(handled.get(3).applicationProperties()).hasSize(properties.toAdvancedMessage()
                .applicationProperties().getValue().size()).containsEntry("p7", "v".repeat(900) + 7);
        assertThat(handled.get(4).annotations()).containsEntry("x-opt-a3", "s3")
                .containsEntry("x-opt-b9", "w".repeat(900) + 9);
    }

    @Test
    void anIdenticalCopyOfAStructuredBodyWithBinariesIsADuplicateNeverAConflictEvenWhenConflictsAreRejected()
            throws Exception {
        Map<String, Object> map = structured(100 * 1024);
        Message<Object> first = Message.create((Object) map).messageId("order-1");
        Message<Object> copy = Message.create((Object) structured(100 * 1024)).messageId("order-1");
        Map<String, Object> changed = structured(100 * 1024);
        changed.put("e5", new Binary(new byte[] {1, 2, 3}));
        Message<Object> other = Message.create((Object) changed).messageId("order-1");

        run(Subscription.builder("orders", handled::add)
                .fingerprint(Fingerprint.body().onConflict(Fingerprint.Action.REJECT)), List.of(first, copy, other));

        assertThat(handled).hasSize(1);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).as("the identical copy").isEqualTo(1);
        assertThat(observer.count(Outcome.REJECTED, SettleReason.CONFLICT)).as("the copy that differs").isEqualTo(1);
        assertThat(observer.conflicts()).singleElement().satisfies(c -> assertThat(c.fingerprint())
                .isNotEqualTo(c.recordedFingerprint()));
    }

    /** A map of about {@code bytes}: strings, binaries, symbols, longs and a nested list, in a fixed order. */
    static Map<String, Object> structured(int bytes) {
        Map<String, Object> map = new LinkedHashMap<>();
        int size = 0;
        for (int i = 0; size < bytes; i++) {
            byte[] b = new byte[700];
            Arrays.fill(b, (byte) i);
            map.put("e" + (4 * i), "text-" + i + "-" + "t".repeat(600));
            map.put("e" + (4 * i + 1), new Binary(b));
            map.put("e" + (4 * i + 2), Symbol.valueOf("sym-" + i));
            map.put("e" + (4 * i + 3), List.of((long) i, "n" + i, new Binary(new byte[] {(byte) i})));
            size += 1400;
        }
        return map;
    }

    /** Sends every message split into transfers of at most {@link #CHUNK} bytes; expects each to be settled. */
    private void run(Subscription.Builder subscription, List<Message<Object>> messages) throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            peer.expectSASLAnonymousConnect();
            peer.expectOpen().withMaxFrameSize(FRAME).respond();
            peer.expectBegin().respond();
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(101);
            for (int i = 0; i < messages.size(); i++) {
                byte[] encoded = encode(messages.get(i));
                assertThat(encoded.length).as("spread over three frames or more").isGreaterThan(2 * CHUNK);
                for (int offset = 0; offset < encoded.length; offset += CHUNK) {
                    int end = Math.min(encoded.length, offset + CHUNK);
                    var transfer = peer.remoteTransfer().withMore(end < encoded.length)
                            .withPayload(Arrays.copyOfRange(encoded, offset, end));
                    if (offset == 0) {
                        transfer.withDeliveryId(i).withDeliveryTag(new byte[] {(byte) i}).withMessageFormat(0);
                    }
                    transfer.queue();
                }
            }
            for (int i = 0; i < messages.size(); i++) {
                peer.expectDisposition().withSettled(true);
            }
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .connection(ScriptedPeer.settings(peer).maxFrameSize(FRAME).build())
                    .observer(observer).subscribe(subscription.build()).start()) {
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == messages.size());
                expectGracefulClose(peer, messages.size(), 101 - messages.size());
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    private static byte[] encode(Message<?> message) throws Exception {
        ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
        byte[] bytes = new byte[buffer.getReadableBytes()];
        buffer.readBytes(bytes, 0, bytes.length);
        return bytes;
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testinfra.LargeMessages.Kind;
import org.acemq.amqp.testinfra.LargeMessages;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every valid message is handled once and accepted, whatever its body type, its size (60 KiB to 4 MiB) and the frame
 * size (16 KiB and 64 KiB: the consumer's {@code maxFrameSize}, under the broker acceptor's 64 KiB), on one embedded
 * Artemis broker: data, string, map, list and amqp-sequence bodies, large application
 * properties and annotations; content equal to what was sent, nothing dead-lettered. Identical copies of map and list
 * messages with binaries inside are duplicates, never conflicts, also when conflicts are rejected. And the control:
 * protonj2 1.1.0 on its own cannot decode such a map (when this control fails, protonj2 has fixed its composite
 * buffer, and {@code WholePayload} can go).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class LargeMessagesIT {

    /** The broker's own frame limit (Artemis also cuts the large messages it sends into frames of at most this). */
    private static final int BROKER_FRAME = 64 * 1024;

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedArtemis.builder().maxDeliveryAttempts(100).redeliveryDelay(Duration.ZERO)
                .acceptorParameters("maxFrameSize=" + BROKER_FRAME).build().start();
        client = AmqpTestClient.connect(broker);
    }

    @AfterAll
    static void stopBroker() {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @ParameterizedTest(name = "{0}-byte frames")
    @ValueSource(ints = {16 * 1024, 64 * 1024})
    void everyBodyTypeAndSizeIsHandledOnceAcceptedAndEqualToWhatWasSent(int frameSize) throws Exception {
        String queue = "large." + frameSize;
        List<String> ids = new ArrayList<>();
        for (Kind kind : Kind.values()) {
            for (int size : LargeMessages.SIZES) {
                ids.add(LargeMessages.id(kind, size));
            }
        }
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Set<String> different = ConcurrentHashMap.newKeySet();
        RecordingObserver observer = new RecordingObserver();
        ConnectionSettings connection = ConnectionSettings.builder(broker.host(), broker.port())
                .maxFrameSize(frameSize).build();
        try (AmqpConsumer consumer = E2e.consumer(broker, "large").connection(connection)
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(observer)
                .subscribe(Subscription.builder(queue, e -> {
                    String id = (String) e.messageId();
                    runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                    int dash = id.lastIndexOf('-');
                    if (!LargeMessages.sameAsSent(Kind.valueOf(id.substring(0, dash)),
                            Integer.parseInt(id.substring(dash + 1)), e)) {
                        different.add(id);
                    }
                }).name("large").build())
                .start()) {
            for (Kind kind : Kind.values()) {
                for (int size : LargeMessages.SIZES) {
                    send(queue, LargeMessages.message(kind, size));
                }
            }
            await().atMost(Duration.ofMinutes(3)).until(() -> observer.settlements().size() >= ids.size());
            await().until(() -> broker.messageCount(queue) == 0);
        }
        assertThat(observer.settlements()).as("every message accepted as processed")
                .allSatisfy(s -> assertThat(s.outcome() + "/" + s.reason()).isEqualTo("ACCEPTED/PROCESSED"))
                .hasSize(ids.size());
        assertThat(runs.keySet()).containsExactlyInAnyOrderElementsOf(ids);
        assertThat(runs).allSatisfy((id, n) -> assertThat(n).as(id).hasValue(1));
        assertThat(different).as("content that differs from what was sent").isEmpty();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue))).as("dead-lettered").isZero();
    }

    @Test
    void identicalCopiesOfMapAndListMessagesWithBinariesInsideAreDuplicatesNeverConflicts() throws Exception {
        String queue = "copies";
        String idless = "copies.idless";
        RecordingObserver observer = new RecordingObserver();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        List<Callable<Message<Object>>> originals = new ArrayList<>(); // each call makes a new copy
        for (Kind kind : List.of(Kind.MAP, Kind.LIST, Kind.SEQUENCE)) {
            originals.add(() -> LargeMessages.message(kind, 60 * 1024));
            originals.add(() -> LargeMessages.message(kind, 1024 * 1024));
        }
        originals.add(() -> {
            Map<String, Object> small = new LinkedHashMap<>();
            small.put("order", "o-1");
            small.put("payload", new Binary(new byte[] {1, 2, 3}));
            small.put("tag", Symbol.valueOf("t"));
            return Message.create((Object) small).messageId("small-map");
        });
        ConnectionSettings connection = ConnectionSettings.builder(broker.host(), broker.port())
                .maxFrameSize(16 * 1024).build();
        Fingerprint rejectConflicts = Fingerprint.body().onConflict(Fingerprint.Action.REJECT);
        try (AmqpConsumer consumer = E2e.consumer(broker, "copies").connection(connection)
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(observer)
                .subscribe(Subscription.builder(queue, e -> runs.computeIfAbsent(e.id(), k -> new AtomicInteger())
                        .incrementAndGet()).name("copies").fingerprint(rejectConflicts).build())
                .subscribe(Subscription.builder(idless, e -> runs.computeIfAbsent(e.id(), k -> new AtomicInteger())
                        .incrementAndGet()).name("idless").missingIdPolicy(MissingIdPolicy.bodyHash())
                        .fingerprint(rejectConflicts).build())
                .start()) {
            for (int copy = 0; copy < 3; copy++) {
                for (Callable<Message<Object>> original : originals) {
                    send(queue, original.call());
                    send(idless, original.call().messageId(null));
                }
                int settled = (copy + 1) * 2 * originals.size();
                await().atMost(Duration.ofMinutes(2)).until(() -> observer.settlements().size() >= settled);
            }
        }
        int n = originals.size();
        assertThat(runs).as("each message's handler ran once").hasSize(2 * n)
                .allSatisfy((id, runCount) -> assertThat(runCount).as(id).hasValue(1));
        assertThat(observer.count("copies", Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(n);
        assertThat(observer.count("copies", Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(2 * n);
        assertThat(observer.count("idless", Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(n);
        assertThat(observer.count("idless", Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(2 * n);
        assertThat(observer.conflicts()).as("identical copies are never conflicts").isEmpty();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue))).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(idless))).isZero();
    }

    /** The control: protonj2 1.1.0 alone, 16 KiB frames, a 1 MiB map from the broker, cannot decode it. */
    @Test
    void protonj2OnItsOwnCannotDecodeAMapOfManyFrames() throws Exception {
        String queue = "control";
        send(queue, LargeMessages.message(Kind.MAP, 1024 * 1024));
        send(queue, LargeMessages.message(Kind.DATA, 1024 * 1024));
        try (Client raw = Client.create();
             Connection connection = raw.connect(broker.host(), broker.port(),
                     new ConnectionOptions().maxFrameSize(16 * 1024));
             Receiver receiver = connection.openReceiver(queue, new ReceiverOptions().autoAccept(false))) {
            Delivery map = receiver.receive(30, TimeUnit.SECONDS);
            assertThatThrownBy(map::message).as("protonj2 1.1.0's composite buffer: fixed? then drop WholePayload")
                    .hasStackTraceContaining("IndexOutOfBoundsException");
            map.accept();
            Delivery data = receiver.receive(30, TimeUnit.SECONDS);
            assertThat((byte[]) data.message().body()).as("a data body of the same size decodes")
                    .isEqualTo(LargeMessages.message(Kind.DATA, 1024 * 1024).body());
            data.accept();
        }
        await().until(() -> broker.messageCount(queue) == 0);
    }

    private static void send(String address, Message<Object> message) throws Exception {
        try (Sender sender = client.connection().openSender(address)) {
            Tracker tracker = sender.send(message);
            tracker.awaitSettlement(30, TimeUnit.SECONDS);
            assertThat(tracker.remoteState().isAccepted()).as("the broker took %s", message.messageId()).isTrue();
        }
    }
}

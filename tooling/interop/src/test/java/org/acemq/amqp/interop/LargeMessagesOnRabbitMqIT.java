package org.acemq.amqp.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testinfra.LargeMessages.Kind;
import org.acemq.amqp.testinfra.LargeMessages;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMq;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Large messages on RabbitMQ ({@link RabbitMqProvider}; 3.10 from the Debian package here), through durable classic
 * queues with dead-lettering: every body type RabbitMQ takes from a publisher (data, string, map, amqp-sequence; an
 * amqp-value list only on 4.x) and large application properties and annotations, 60 KiB to 4 MiB, with 16 KiB and 64 KiB frames (the consumer's {@code maxFrameSize}; the
 * broker's own limit is 128 KiB), each handled once, accepted, equal to what was sent, nothing dead-lettered; identical
 * copies of map and list messages (with and without a message-id) absorbed as duplicates with conflicts rejected; and
 * the control: protonj2 1.1.0 alone cannot decode such a map from RabbitMQ either.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class LargeMessagesOnRabbitMqIT {

    /**
     * 60 KiB, 1 MiB and 4 MiB. A data section only up to 1 MiB: RabbitMQ 3.10 took 50 to 60 s to settle the publish of
     * a 4 MiB data section of random bytes on this loaded 2-core machine (1 to 1.5 s for a 4 MiB string, map or
     * amqp-sequence), and data bodies were never affected by the decode bug (protonj2 decodes them from any number of
     * frames; the Artemis matrix has them up to 4 MiB).
     */
    private static List<Integer> sizes(Kind kind) {
        return kind == Kind.DATA ? List.of(60 * 1024, 1024 * 1024) : List.of(60 * 1024, 1024 * 1024, 4 * 1024 * 1024);
    }

    /** How long the broker may take to settle one publish (see {@link #sizes}). */
    private static final Duration PUBLISH_WAIT = Duration.ofMinutes(2);

    private static RabbitMq rabbit;
    private static AmqpTestClient publisher;
    private static final String RUN = UUID.randomUUID().toString().substring(0, 6);

    @BeforeAll
    static void connect() {
        rabbit = RabbitMqProvider.shared();
        publisher = AmqpTestClient.connect(rabbit.host(), rabbit.port(), rabbit.user(), rabbit.password());
    }

    @AfterAll
    static void close() {
        if (publisher != null) {
            publisher.close();
        }
    }

    private static String queue(String name) {
        String queue = "interop.large." + name + "." + RUN;
        rabbit.declareQueue(queue);
        return queue;
    }

    private static ConnectionSettings.Builder connection(int frameSize) {
        return ConnectionSettings.builder(rabbit.host(), rabbit.port()).credentials(rabbit.user(), rabbit.password())
                .maxFrameSize(frameSize);
    }

    /**
     * @return the kinds this RabbitMQ accepts from a publisher: 3.x does not take an amqp-value list of more than one
     *     element (its AMQP 1.0 plugin decodes the list as the fields of a record and closes the connection: see
     *     {@link #rabbitMq3RefusesAnAmqpValueList})
     */
    private static List<Kind> kinds() {
        List<Kind> kinds = new ArrayList<>(List.of(Kind.values()));
        if (rabbit.majorVersion() < 4) {
            kinds.remove(Kind.LIST);
        }
        return kinds;
    }

    /** RabbitMQ 3.x closes a publisher's connection on an amqp-value list; 4.x takes it (and it is in the matrix). */
    private static void rabbitMq3RefusesAnAmqpValueList(String queue) throws Exception {
        try (AmqpTestClient own = AmqpTestClient.connect(rabbit.host(), rabbit.port(), rabbit.user(),
                rabbit.password());
             Sender sender = own.connection().openSender(rabbit.queueAddress(queue))) {
            Tracker tracker = sender.send(LargeMessages.message(Kind.LIST, 60 * 1024));
            assertThatThrownBy(() -> tracker.awaitSettlement(PUBLISH_WAIT.toSeconds(), TimeUnit.SECONDS))
                    .as("RabbitMQ %s takes an amqp-value list now: add LIST back to this matrix", rabbit.version())
                    .hasStackTraceContaining("Connection reset");
        }
    }

    @ParameterizedTest(name = "{0}-byte frames")
    @ValueSource(ints = {16 * 1024, 64 * 1024})
    void everyBodyTypeAndSizeIsHandledOnceAcceptedAndEqualToWhatWasSent(int frameSize) throws Exception {
        String queue = queue("frames-" + frameSize);
        if (rabbit.majorVersion() < 4) {
            rabbitMq3RefusesAnAmqpValueList(queue);
        }
        List<String> ids = new ArrayList<>();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Set<String> different = ConcurrentHashMap.newKeySet();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = AmqpConsumer.builder().name("large").connection(connection(frameSize).build())
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(observer)
                .subscribe(Subscription.builder(rabbit.queueAddress(queue), e -> {
                    String id = (String) e.messageId();
                    runs.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                    int dash = id.lastIndexOf('-');
                    if (!LargeMessages.sameAsSent(Kind.valueOf(id.substring(0, dash)),
                            Integer.parseInt(id.substring(dash + 1)), e)) {
                        different.add(id);
                    }
                }).name("large").build())
                .start()) {
            for (Kind kind : kinds()) {
                for (int size : sizes(kind)) {
                    ids.add(LargeMessages.id(kind, size));
                    send(queue, LargeMessages.message(kind, size));
                }
            }
            await().atMost(Duration.ofMinutes(4)).until(() -> observer.settlements().size() >= ids.size());
            await().until(() -> rabbit.readyCount(queue) == 0);
        }
        assertThat(observer.settlements()).as("every message accepted as processed")
                .allSatisfy(s -> assertThat(s.outcome() + "/" + s.reason()).isEqualTo("ACCEPTED/PROCESSED"))
                .hasSize(ids.size());
        assertThat(runs.keySet()).containsExactlyInAnyOrderElementsOf(ids);
        assertThat(runs).allSatisfy((id, n) -> assertThat(n).as(id).hasValue(1));
        assertThat(different).as("content that differs from what was sent").isEmpty();
        assertThat(rabbit.readyCount(RabbitMq.deadLetterQueueName(queue))).as("dead-lettered").isZero();
    }

    @Test
    void identicalCopiesOfMapAndListMessagesAreDuplicatesNeverConflicts() throws Exception {
        String queue = queue("copies");
        String idless = queue("copies-idless");
        List<Callable<Message<Object>>> originals = new ArrayList<>(); // each call makes a new copy
        for (Kind kind : List.of(Kind.MAP, Kind.LIST, Kind.SEQUENCE)) {
            if (!kinds().contains(kind)) {
                continue;
            }
            originals.add(() -> LargeMessages.message(kind, 60 * 1024));
            originals.add(() -> LargeMessages.message(kind, 256 * 1024));
        }
        RecordingObserver observer = new RecordingObserver();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Fingerprint rejectConflicts = Fingerprint.body().onConflict(Fingerprint.Action.REJECT);
        try (AmqpConsumer consumer = AmqpConsumer.builder().name("copies").connection(connection(16 * 1024).build())
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(observer)
                .subscribe(Subscription.builder(rabbit.queueAddress(queue), e -> runs.computeIfAbsent(e.id(),
                        k -> new AtomicInteger()).incrementAndGet()).name("copies").fingerprint(rejectConflicts).build())
                .subscribe(Subscription.builder(rabbit.queueAddress(idless), e -> runs.computeIfAbsent(e.id(),
                        k -> new AtomicInteger()).incrementAndGet()).name("idless")
                        .missingIdPolicy(MissingIdPolicy.bodyHash()).fingerprint(rejectConflicts).build())
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
                .allSatisfy((id, count) -> assertThat(count).as(id).hasValue(1));
        assertThat(observer.count("copies", Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(2 * n);
        assertThat(observer.count("idless", Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(2 * n);
        assertThat(observer.conflicts()).as("identical copies are never conflicts").isEmpty();
        assertThat(rabbit.readyCount(RabbitMq.deadLetterQueueName(queue))).isZero();
        assertThat(rabbit.readyCount(RabbitMq.deadLetterQueueName(idless))).isZero();
    }

    /** The control: protonj2 1.1.0 alone, 16 KiB frames, a 1 MiB map from RabbitMQ, cannot decode it. */
    @Test
    void protonj2OnItsOwnCannotDecodeAMapOfManyFrames() throws Exception {
        String queue = queue("control");
        send(queue, LargeMessages.message(Kind.MAP, 1024 * 1024));
        try (Client raw = Client.create();
             Connection connection = raw.connect(rabbit.host(), rabbit.port(), new ConnectionOptions()
                     .user(rabbit.user()).password(rabbit.password()).maxFrameSize(16 * 1024));
             Receiver receiver = connection.openReceiver(rabbit.queueAddress(queue),
                     new ReceiverOptions().autoAccept(false))) {
            Delivery map = receiver.receive(30, TimeUnit.SECONDS);
            assertThat(map).as("the map arrived").isNotNull();
            assertThatThrownBy(map::message).as("protonj2 1.1.0's composite buffer: fixed? then drop WholePayload")
                    .hasStackTraceContaining("IndexOutOfBoundsException");
            map.accept();
        }
        await().until(() -> rabbit.readyCount(queue) == 0);
    }

    private static void send(String queue, Message<Object> message) throws Exception {
        try (Sender sender = publisher.connection().openSender(rabbit.queueAddress(queue))) {
            Tracker tracker = sender.send(message);
            tracker.awaitSettlement(PUBLISH_WAIT.toSeconds(), TimeUnit.SECONDS);
            assertThat(tracker.remoteState().isAccepted()).as("the broker took %s", message.messageId()).isTrue();
        } catch (Exception e) {
            throw new AssertionError("sending " + message.messageId() + " to " + queue + " failed; the broker's log "
                    + "ends with:\n" + logTail(), e);
        }
    }

    private static String logTail() {
        try {
            java.nio.file.Path log = rabbit.logFile();
            if (log == null) {
                return "(not readable)";
            }
            List<String> lines = java.nio.file.Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (java.io.IOException e) {
            return "(" + e + ")";
        }
    }
}

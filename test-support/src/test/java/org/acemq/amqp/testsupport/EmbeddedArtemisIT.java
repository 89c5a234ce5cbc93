package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.testsupport.AmqpTestClient.AmqpTestClientException;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientLinkRemotelyClosedException;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.UnsignedLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Lifecycle, addressing and the test helpers of {@link EmbeddedArtemis} and {@link AmqpTestClient}. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EmbeddedArtemisIT {

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedArtemis.builder().build().start();
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

    @Test
    void listensOnAnEphemeralLoopbackPort() throws Exception {
        assertThat(broker.isRunning()).isTrue();
        assertThat(broker.host()).isEqualTo("127.0.0.1");
        assertThat(broker.port()).isBetween(1024, 65535).isNotEqualTo(5672);
        assertThat(broker.uri()).isEqualTo("amqp://127.0.0.1:" + broker.port());
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(broker.host(), broker.port()), 2000);
            assertThat(s.isConnected()).isTrue();
        }
    }

    @Test
    void twoBrokersGetDifferentPortsAndStopReleasesThePort() throws Exception {
        int port;
        Path dataDir;
        try (EmbeddedArtemis other = EmbeddedArtemis.startDefault()) {
            port = other.port();
            dataDir = other.dataDirectory();
            assertThat(port).isNotEqualTo(broker.port());
            assertThat(dataDir).exists();
            other.stop();
            assertThat(other.isRunning()).isFalse();
            assertThatThrownBy(() -> {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
                }
            }).isInstanceOf(java.io.IOException.class);
        }
        assertThat(dataDir).doesNotExist(); // temp data directory is deleted on close
    }

    @Test
    void roundTripWithEveryMessageIdType() {
        String q = "roundtrip";
        UUID uuid = UUID.randomUUID();
        byte[] binId = {1, 2, 3};
        client.send(q,
                AmqpTestClient.message("id-1", "string body").property("tenant", "acme").property("n", 7),
                AmqpTestClient.message(uuid, "uuid body"),
                AmqpTestClient.message(42L, "ulong body"),
                AmqpTestClient.message(binId, new byte[] {9, 8}),
                AmqpTestClient.message(UnsignedLong.valueOf(-1L), "max ulong").durable(false),
                AmqpTestClient.message(null, Map.of("k", "v")));

        List<ReceivedMessage> got = client.receive(q, 6, Duration.ofSeconds(10));

        assertThat(got).extracting(ReceivedMessage::messageId).containsExactly(
                "id-1", uuid, UnsignedLong.valueOf(42), new Binary(binId), UnsignedLong.valueOf(-1L), null);
        assertThat(got.get(0).body()).isEqualTo("string body");
        assertThat(got.get(0).properties()).containsEntry("tenant", "acme").containsEntry("n", 7);
        assertThat(got.get(0).durable()).isTrue();
        assertThat(got.get(0).deliveryCount()).isZero();
        assertThat(got.get(3).body()).isEqualTo(new byte[] {9, 8});
        assertThat(got.get(4).durable()).isFalse();
        assertThat(got.get(5).body()).isEqualTo(Map.of("k", "v"));
        await().until(() -> broker.messageCount(q) == 0);
    }

    @Test
    void sendBatchIsPipelinedAndDrainTakesEverything() {
        String q = "batch";
        client.sendBatch(q, 2500, i -> "b-" + i);
        await().until(() -> broker.messageCount(q) == 2500);

        List<ReceivedMessage> got = client.drain(q);

        assertThat(got).hasSize(2500);
        assertThat(got.get(0).messageId()).isEqualTo("b-0");
        assertThat(got.get(2499).messageId()).isEqualTo("b-2499");
        assertThat(got.get(2499).body()).isEqualTo("message-2499");
        await().until(() -> broker.messageCount(q) == 0);
        assertThat(client.drain(q)).isEmpty();
    }

    @Test
    void receiveAllStopsWhenIdle() {
        String q = "receive-all";
        client.sendBatch(q, 5, i -> (long) i);
        List<ReceivedMessage> got = client.receiveAll(q, Duration.ofMillis(300));
        assertThat(got).extracting(ReceivedMessage::messageId)
                .containsExactly(UnsignedLong.valueOf(0), UnsignedLong.valueOf(1), UnsignedLong.valueOf(2),
                        UnsignedLong.valueOf(3), UnsignedLong.valueOf(4));
    }

    @Test
    void receiveFailsWhenTooFewArrive() {
        String q = "too-few";
        client.sendBatch(q, 1, i -> "x");
        assertThatThrownBy(() -> client.receive(q, 2, Duration.ofMillis(300)))
                .isInstanceOf(AmqpTestClientException.class)
                .hasMessageContaining("received 1 of 2");
    }

    @Test
    void messageCountIncludesDeliveringAndQueueHelpersWork() throws Exception {
        String q = "counting";
        assertThat(broker.queueExists(q)).isFalse();
        assertThat(broker.messageCount(q)).isZero();
        client.sendBatch(q, 3, i -> "c-" + i);
        assertThat(broker.queueExists(q)).isTrue();
        await().until(() -> broker.messageCount(q) == 3);
        assertThat(EmbeddedArtemis.deadLetterQueueName(q)).isEqualTo("DLQ.counting");

        try (Client c = Client.create();
             Connection conn = c.connect(broker.host(), broker.port());
             Receiver r = conn.openReceiver(q, new ReceiverOptions().autoAccept(false).creditWindow(0))) {
            r.addCredit(1);
            Delivery d = r.receive(10, TimeUnit.SECONDS);
            assertThat(d).isNotNull();
            await().until(() -> broker.deliveringCount(q) == 1);
            assertThat(broker.messageCount(q)).isEqualTo(3); // 2 ready + 1 delivering
            assertThat(broker.consumerCount(q)).isEqualTo(1);
            d.accept();
            await().until(() -> broker.messageCount(q) == 2 && broker.deliveringCount(q) == 0);
        }
        await().until(() -> broker.consumerCount(q) == 0);
        assertThat(client.drain(q)).hasSize(2);
    }

    @Test
    void detachConsumersClosesTheLinkButNotTheConnection() throws Exception {
        String q = "detach";
        client.sendBatch(q, 1, i -> "d-0");
        try (Client c = Client.create(); Connection conn = c.connect(broker.host(), broker.port())) {
            Receiver r = conn.openReceiver(q, new ReceiverOptions().autoAccept(false).creditWindow(10));
            Delivery d = r.receive(10, TimeUnit.SECONDS);
            assertThat(d).isNotNull();
            await().until(() -> broker.deliveringCount(q) == 1);

            assertThat(broker.detachConsumers(q)).isEqualTo(1);

            assertThatThrownBy(() -> r.receive(10, TimeUnit.SECONDS))
                    .isInstanceOf(ClientLinkRemotelyClosedException.class)
                    .satisfies(e -> assertThat(((ClientLinkRemotelyClosedException) e).getErrorCondition().condition())
                            .isEqualTo("amqp:resource-deleted"));
            assertThatThrownBy(d::accept).isInstanceOf(org.apache.qpid.protonj2.client.exceptions.ClientException.class);
            await().until(() -> broker.consumerCount(q) == 0 && broker.deliveringCount(q) == 0);
            assertThat(broker.messageCount(q)).isEqualTo(1);

            // the connection survives: a new link on it gets the message back
            try (Receiver r2 = conn.openReceiver(q, new ReceiverOptions().autoAccept(false))) {
                Delivery again = r2.receive(10, TimeUnit.SECONDS);
                assertThat(again).isNotNull();
                assertThat(again.message().messageId()).isEqualTo("d-0");
                again.accept();
            }
        }
        await().until(() -> broker.messageCount(q) == 0);
    }

    @Test
    void requireCredentials() {
        try (EmbeddedArtemis secured = EmbeddedArtemis.builder().requireCredentials("app", "s3cret").build().start()) {
            try (AmqpTestClient ok = AmqpTestClient.connect(secured)) {
                ok.send("secured", AmqpTestClient.message("s-1", "hello"));
                assertThat(ok.drain("secured")).extracting(ReceivedMessage::messageId).containsExactly("s-1");
            }
            assertThatThrownBy(() -> AmqpTestClient.connect(secured.host(), secured.port(), "app", "wrong").close())
                    .isInstanceOf(AmqpTestClientException.class);
            assertThatThrownBy(() -> AmqpTestClient.connect(secured.host(), secured.port()).close())
                    .isInstanceOf(AmqpTestClientException.class);
        }
    }

    @Test
    void persistentRestartKeepsDurableMessagesOnTheSamePort(@TempDir Path dataDir) {
        try (EmbeddedArtemis p = EmbeddedArtemis.builder().persistent(true).dataDirectory(dataDir).build().start()) {
            int port = p.port();
            try (AmqpTestClient c = AmqpTestClient.connect(p)) {
                c.send("persist",
                        AmqpTestClient.message("durable-1", "kept").property("k", "v"),
                        AmqpTestClient.message("transient-1", "lost").durable(false));
            }
            await().until(() -> p.messageCount("persist") == 2);

            p.restart();

            assertThat(p.port()).isEqualTo(port);
            assertThat(p.messageCount("persist")).isEqualTo(1);
            try (AmqpTestClient c = AmqpTestClient.connect(p)) {
                List<ReceivedMessage> got = c.drain("persist");
                assertThat(got).extracting(ReceivedMessage::messageId).containsExactly("durable-1");
                assertThat(got.get(0).properties()).containsEntry("k", "v");
            }
        }
        assertThat(dataDir).exists(); // a given data directory is never deleted
        assertThat(Files.exists(dataDir.resolve("journal"))).isTrue();
    }

    @Test
    void nonPersistentRestartLosesMessagesButKeepsThePort() {
        try (EmbeddedArtemis m = EmbeddedArtemis.startDefault()) {
            int port = m.port();
            try (AmqpTestClient c = AmqpTestClient.connect(m)) {
                c.send("volatile", AmqpTestClient.message("v-1", "gone"));
            }
            m.restart();
            assertThat(m.port()).isEqualTo(port);
            assertThat(m.messageCount("volatile")).isZero();
        }
    }
}

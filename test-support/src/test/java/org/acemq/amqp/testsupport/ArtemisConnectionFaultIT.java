package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.DisconnectionEvent;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Broker-side connection faults that the consumer runtime's fault tests rely on. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArtemisConnectionFaultIT {

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @TempDir
    static java.nio.file.Path dataDir;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedArtemis.builder().persistent(true).dataDirectory(dataDir).build().start();
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
    void dropAllConnectionsFailsAClientWithoutReconnect() throws Exception {
        String q = "fault-drop";
        client.sendBatch(q, 1, i -> "held");
        CompletableFuture<DisconnectionEvent> disconnected = new CompletableFuture<>();
        ConnectionOptions options = new ConnectionOptions()
                .disconnectedHandler((conn, event) -> disconnected.complete(event));
        try (Client c = Client.create(); Connection conn = c.connect(broker.host(), broker.port(), options)) {
            Receiver r = conn.openReceiver(q, new ReceiverOptions().autoAccept(false));
            Delivery held = r.receive(10, TimeUnit.SECONDS);
            assertThat(held).isNotNull();
            await().until(() -> broker.deliveringCount(q) == 1);

            int dropped = broker.dropAllConnections();

            assertThat(dropped).isGreaterThanOrEqualTo(2); // this one and the shared test client
            DisconnectionEvent event = disconnected.get(10, TimeUnit.SECONDS);
            assertThat(event.failureCause()).isNotNull();
            assertThatThrownBy(() -> r.receive(5, TimeUnit.SECONDS)).isInstanceOf(ClientException.class);
        }
        // the held delivery went back to the queue
        await().until(() -> broker.deliveringCount(q) == 0 && broker.messageCount(q) == 1);
        client.close();
        client = AmqpTestClient.connect(broker);
        ReceivedMessage back = client.drain(q).get(0);
        assertThat(back.messageId()).isEqualTo("held");
        // Observation, not a contract (see the report): whether a dropped connection counts as a failed attempt.
        System.out.println("[observed] delivery-count after dropAllConnections: " + back.deliveryCount());
    }

    @Test
    void forceCloseAllConnectionsClosesTheClientWithAnError() throws Exception {
        CompletableFuture<DisconnectionEvent> disconnected = new CompletableFuture<>();
        ConnectionOptions options = new ConnectionOptions()
                .disconnectedHandler((conn, event) -> disconnected.complete(event));
        try (Client c = Client.create(); Connection conn = c.connect(broker.host(), broker.port(), options)) {
            conn.openFuture().get(10, TimeUnit.SECONDS);
            assertThat(broker.forceCloseAllConnections()).isGreaterThanOrEqualTo(1);
            DisconnectionEvent event = disconnected.get(10, TimeUnit.SECONDS);
            System.out.println("[observed] forceCloseAllConnections failure cause: " + event.failureCause());
            assertThat(event.failureCause()).isNotNull();
        }
        client.close();
        client = AmqpTestClient.connect(broker);
    }

    @Test
    void reconnectingClientSurvivesADropAndABrokerRestartOnTheSamePort() throws Exception {
        String q = "fault-reconnect";
        AtomicInteger interrupted = new AtomicInteger();
        AtomicInteger reconnected = new AtomicInteger();
        ConnectionOptions options = new ConnectionOptions()
                .interruptedHandler((conn, e) -> interrupted.incrementAndGet())
                .reconnectedHandler((conn, e) -> reconnected.incrementAndGet());
        options.reconnectOptions().reconnectEnabled(true).reconnectDelay(20).maxReconnectDelay(200);
        try (Client c = Client.create(); Connection conn = c.connect(broker.host(), broker.port(), options)) {
            Receiver r = conn.openReceiver(q, new ReceiverOptions().autoAccept(false));
            r.openFuture().get(10, TimeUnit.SECONDS);

            broker.dropAllConnections();
            await().until(() -> reconnected.get() == 1);
            client.close();
            client = AmqpTestClient.connect(broker);
            client.send(q, AmqpTestClient.message("after-drop", "1"));
            Delivery d1 = r.receive(10, TimeUnit.SECONDS);
            assertThat(d1).isNotNull();
            assertThat(d1.message().messageId()).isEqualTo("after-drop");
            d1.accept();

            client.send(q, AmqpTestClient.message("before-restart", "2"));
            await().until(() -> broker.messageCount(q) >= 1);
            client.close();
            int port = broker.port();
            broker.restart();
            assertThat(broker.port()).isEqualTo(port);
            await().until(() -> reconnected.get() == 2);

            Delivery d2 = r.receive(10, TimeUnit.SECONDS);
            assertThat(d2).isNotNull();
            assertThat(d2.message().messageId()).isEqualTo("before-restart");
            d2.accept();
            await().until(() -> broker.messageCount(q) == 0);
            // protonj2 1.1.0 calls interruptedHandler again for every failed attempt while the broker is down
            System.out.println("[observed] interruptedHandler calls across one drop and one restart: " + interrupted.get());
            assertThat(interrupted.get()).isGreaterThanOrEqualTo(2);
        } finally {
            client.close();
            client = AmqpTestClient.connect(broker);
        }
    }
}

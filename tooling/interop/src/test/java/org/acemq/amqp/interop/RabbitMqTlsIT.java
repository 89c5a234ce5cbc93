package org.acemq.amqp.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMq;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMqTlsNode;
import org.acemq.amqp.testinfra.tls.TestPki;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * TLS on RabbitMQ 3.10's AMQP 1.0 plugin, which serves on the node's TLS listener too: a private node
 * ({@link RabbitMqTlsNode}) with certificates made for the run ({@link TestPki}). A trusted node, and mutual TLS,
 * work; a node certificate from another authority, and a TLS client on the plain port (RabbitMQ answers in plain
 * AMQP), leave the consumer {@code FAILED} after one attempt with the reason; a plain client on the TLS port never
 * connects; no password reaches the log.
 */
@Timeout(300)
class RabbitMqTlsIT {

    static TestPki pki;
    static RabbitMqTlsNode node;
    static RabbitMq broker;

    @BeforeAll
    static void startNode() {
        pki = TestPki.shared();
        node = RabbitMqTlsNode.start(pki.caPem(), pki.brokerCertificatePem(), pki.brokerKeyPem());
        broker = node.broker();
    }

    @AfterAll
    static void stopNode() {
        if (node != null) {
            node.close();
        }
    }

    static String queue(String name) {
        String q = "interop.tls." + name;
        broker.declareQueue(q);
        return q;
    }

    static ConnectionSettings.Builder tls() {
        return ConnectionSettings.builder(broker.host(), node.tlsPort())
                .credentials(broker.user(), broker.password())
                .trustStore(pki.trustStore().toString(), pki.password())
                .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(300));
    }

    static AmqpConsumer.Builder consumer(String name, String queue, ConnectionSettings settings, Set<String> seen) {
        return AmqpConsumer.builder().name(name).connection(settings).store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(broker.queueAddress(queue), e -> seen.add(e.id())).build());
    }

    void consumes(String name, ConnectionSettings settings) {
        String queue = queue(name);
        Set<String> seen = ConcurrentHashMap.newKeySet();
        LogWindow log = LogWindow.suiteLog(l -> l.contains(pki.password()));
        try (AmqpConsumer c = consumer(name, queue, settings, seen).start();
             AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), broker.user(),
                     broker.password())) {
            await().atMost(Duration.ofSeconds(60)).until(() -> c.health().healthy());
            client.sendBatch(broker.queueAddress(queue), 3, i -> name + "-" + i);
            await().atMost(Duration.ofSeconds(60)).until(() -> seen.size() == 3 && broker.readyCount(queue) == 0);
        }
        assertThat(log.problems()).as("log lines with the store password").isEmpty();
    }

    String failsAtOnce(String name, ConnectionSettings settings, String reason) {
        LogWindow log = LogWindow.suiteLog(l -> l.contains("'" + name + "'") || l.contains(pki.password()));
        try (AmqpConsumer c = consumer(name, queue(name), settings, ConcurrentHashMap.newKeySet()).start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> c.health().state() == ConsumerHealth.State.FAILED);
            String lastError = c.health().lastError();
            assertThat(lastError).contains(reason);
            if (log.available()) {
                List<String> lines = log.problems();
                assertThat(lines).noneMatch(l -> l.contains(pki.password())).noneMatch(l -> l.contains("next try"));
                assertThat(lines).filteredOn(l -> l.contains(reason)).singleElement()
                        .satisfies(l -> assertThat(l).contains("after 1 attempt(s)"));
            }
            return lastError;
        }
    }

    @Test
    void aTrustedNodeServesAmqp10OverTls() {
        consumes("trusted", tls().build());
    }

    @Test
    void mutualTlsWithAClientCertificate() {
        consumes("mutual", tls().keyStore(pki.clientKeyStore().toString(), pki.password()).keyAlias("client").build());
    }

    @Test
    void aNodeCertificateFromAnotherAuthorityFailsTheConsumerAtOnce() {
        failsAtOnce("wrong-ca", tls().trustStore(pki.otherTrustStore().toString(), pki.password()).build(),
                "the broker's certificate is not trusted");
    }

    @Test
    void aTlsConsumerOnThePlainPortFailsAtOnce() {
        failsAtOnce("tls-on-plain", ConnectionSettings.builder(broker.host(), broker.port())
                .credentials(broker.user(), broker.password())
                .trustStore(pki.trustStore().toString(), pki.password()).build(), "does not speak TLS");
    }

    @Test
    void aPlainConsumerOnTheTlsPortNeverConnects() {
        try (AmqpConsumer c = consumer("plain-on-tls", queue("plain-on-tls"), ConnectionSettings.builder(broker.host(),
                node.tlsPort()).credentials(broker.user(), broker.password()).openTimeout(Duration.ofSeconds(3))
                .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(300)).build(),
                ConcurrentHashMap.newKeySet()).start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> c.health().lastError() != null);
            await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(10))
                    .until(() -> !c.health().connected() && c.health().state() == ConsumerHealth.State.STARTING);
        }
        assertThat(broker.consumerCount("interop.tls.plain-on-tls")).isZero();
    }
}

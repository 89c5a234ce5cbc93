package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Pins down how Artemis 2.55 treats each AMQP outcome, as the consumer runtime's tests assume
 * (artemis-broker-notes.md, section 3): maxDeliveryAttempts=3, redelivery delay 0 unless stated.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArtemisOutcomeIT {

    private static final Duration NO_MORE = Duration.ofMillis(300);

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    private Client protonClient;
    private Connection connection;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedArtemis.builder().maxDeliveryAttempts(3).build().start();
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

    @BeforeEach
    void connect() throws ClientException {
        protonClient = Client.create();
        connection = protonClient.connect(broker.host(), broker.port());
    }

    @AfterEach
    void disconnect() {
        connection.close();
        protonClient.close();
    }

    private Receiver manualReceiver(String queue) throws ClientException {
        return connection.openReceiver(queue, new ReceiverOptions().autoAccept(false).creditWindow(10));
    }

    private static Delivery next(Receiver r) throws ClientException {
        Delivery d = r.receive(10, TimeUnit.SECONDS);
        assertThat(d).as("delivery").isNotNull();
        return d;
    }

    @Test
    void modifiedDeliveryFailedThreeTimesGoesToTheDeadLetterQueue() throws Exception {
        String q = "outcome-modified";
        client.send(q, AmqpTestClient.message("m-1", "poison").property("tenant", "acme"));
        List<Long> counts = new ArrayList<>();
        try (Receiver r = manualReceiver(q)) {
            for (int i = 0; i < 3; i++) {
                Delivery d = next(r);
                counts.add(d.message().deliveryCount());
                d.modified(true, false);
            }
            await().until(() -> broker.messageCount(q) == 0
                    && broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == 1);
            assertThat(r.receive(NO_MORE.toMillis(), TimeUnit.MILLISECONDS)).as("4th delivery").isNull();
        }
        assertThat(counts).containsExactly(0L, 1L, 2L);

        List<ReceivedMessage> dead = client.drain(EmbeddedArtemis.deadLetterQueueName(q));
        assertThat(dead).hasSize(1);
        ReceivedMessage m = dead.get(0);
        assertThat(m.messageId()).isEqualTo("m-1");
        assertThat(m.body()).isEqualTo("poison");
        assertThat(m.properties()).containsEntry("tenant", "acme");
        assertThat(m.deliveryCount()).isZero(); // reset on dead-lettering
        assertThat(m.annotations()).containsEntry("x-opt-ORIG-ADDRESS", q).containsEntry("x-opt-ORIG-QUEUE", q)
                .containsKey("x-opt-ORIG-MESSAGE-ID");
    }

    @Test
    void rejectGoesToTheDeadLetterQueueImmediately() throws Exception {
        String q = "outcome-reject";
        client.send(q, AmqpTestClient.message("r-1", "bad"));
        try (Receiver r = manualReceiver(q)) {
            Delivery d = next(r);
            assertThat(d.message().deliveryCount()).isZero();
            d.reject("acemq:test", "rejected by test");
            await().until(() -> broker.messageCount(q) == 0
                    && broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == 1);
            assertThat(r.receive(NO_MORE.toMillis(), TimeUnit.MILLISECONDS)).as("redelivery").isNull();
        }
        assertThat(client.drain(EmbeddedArtemis.deadLetterQueueName(q)))
                .extracting(ReceivedMessage::messageId).containsExactly("r-1");
    }

    @Test
    void releaseRedeliversWithoutIncrementingDeliveryCountAndNeverDeadLetters() throws Exception {
        String q = "outcome-release";
        client.send(q, AmqpTestClient.message("rel-1", "again"));
        List<Long> counts = new ArrayList<>();
        try (Receiver r = manualReceiver(q)) {
            for (int i = 0; i < 5; i++) { // more than maxDeliveryAttempts
                Delivery d = next(r);
                counts.add(d.message().deliveryCount());
                d.release();
            }
            Delivery last = next(r);
            counts.add(last.message().deliveryCount());
            assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
            last.accept();
        }
        assertThat(counts).containsOnly(0L).hasSize(6);
        await().until(() -> broker.messageCount(q) == 0);
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void modifiedUndeliverableHereIsNotRedeliveredToTheSameLink() throws Exception {
        String q = "outcome-undeliverable-here";
        client.send(q, AmqpTestClient.message("u-1", "elsewhere"));
        try (Receiver r = manualReceiver(q)) {
            next(r).modified(true, true);
            assertThat(r.receive(NO_MORE.toMillis(), TimeUnit.MILLISECONDS)).as("same link").isNull();
            assertThat(broker.messageCount(q)).isEqualTo(1);
            try (Receiver r2 = manualReceiver(q)) {
                Delivery d = next(r2);
                assertThat(d.message().deliveryCount()).isEqualTo(1);
                d.accept();
            }
        }
        await().until(() -> broker.messageCount(q) == 0);
    }

    @Test
    void closingTheConnectionReturnsUnsettledDeliveriesWithoutCountingAnAttempt() throws Exception {
        String q = "outcome-close";
        client.sendBatch(q, 3, i -> "c-" + i);
        try (Client c = Client.create(); Connection conn = c.connect(broker.host(), broker.port())) {
            Receiver r = conn.openReceiver(q, new ReceiverOptions().autoAccept(false).creditWindow(10));
            for (int i = 0; i < 3; i++) {
                next(r);
            }
            await().until(() -> broker.deliveringCount(q) == 3);
        }
        await().until(() -> broker.deliveringCount(q) == 0 && broker.messageCount(q) == 3);
        List<ReceivedMessage> back = client.drain(q);
        assertThat(back).extracting(ReceivedMessage::messageId).containsExactly("c-0", "c-1", "c-2");
        assertThat(back).extracting(ReceivedMessage::deliveryCount).containsOnly(0L);
    }

    @Test
    void redeliveryDelayHoldsModifiedMessagesBackAsScheduled() throws Exception {
        try (EmbeddedArtemis delayed = EmbeddedArtemis.builder().redeliveryDelay(Duration.ofMillis(700)).build().start();
             Client c = Client.create();
             Connection conn = c.connect(delayed.host(), delayed.port())) {
            String q = "outcome-delay";
            try (AmqpTestClient tc = AmqpTestClient.connect(delayed)) {
                tc.send(q, AmqpTestClient.message("late-1", "later"));
            }
            try (Receiver r = conn.openReceiver(q, new ReceiverOptions().autoAccept(false))) {
                next(r).modified(true, false);
                long failedAt = System.nanoTime();
                await().until(() -> delayed.scheduledCount(q) == 1);
                assertThat(delayed.messageCount(q)).isEqualTo(1); // scheduled messages are counted
                Delivery d = next(r);
                long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - failedAt);
                assertThat(waitedMs).isGreaterThanOrEqualTo(600);
                assertThat(d.message().deliveryCount()).isEqualTo(1);
                d.accept();
            }
            await().until(() -> delayed.messageCount(q) == 0);
        }
    }
}

package org.acemq.amqp.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMq;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.Sender;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Request-reply through {@code Envelope.reply} on RabbitMQ ({@link RabbitMqProvider}; 3.10 from the Debian package
 * here). RabbitMQ 3's AMQP 1.0 plugin has no dynamic (broker-named) nodes, so the requester does what RabbitMQ users do
 * there: it declares its own temporary reply queue (one the broker deletes a minute after it was last used:
 * {@code x-expires}) and puts that queue's address in {@code reply-to}. The same round trip on Artemis,
 * with a dynamic receiver, is {@code SendIT} in the runtime's suite.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class RequestReplyOnRabbitMqIT {

    private static final String RUN = UUID.randomUUID().toString().substring(0, 6);

    private static RabbitMq rabbit;
    private static AmqpTestClient requester;

    @BeforeAll
    static void connect() {
        rabbit = RabbitMqProvider.shared();
        requester = AmqpTestClient.connect(rabbit.host(), rabbit.port(), rabbit.user(), rabbit.password());
    }

    @AfterAll
    static void close() {
        if (requester != null) {
            requester.close();
        }
    }

    @Test
    void eachRequestIsAnsweredOnceOnTheRequestersTemporaryQueueWithItsCorrelationId() throws Exception {
        String requests = "interop.requests." + RUN;
        String replyQueue = "interop.replies." + RUN;
        rabbit.declareQueue(requests);
        rabbit.declareQueue(replyQueue, Map.of("x-expires", 60_000));
        String replyTo = rabbit.queueAddress(replyQueue);

        AtomicInteger runs = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        int count = 20;
        try (AmqpConsumer consumer = AmqpConsumer.builder().name("replier")
                .connection(ConnectionSettings.builder(rabbit.host(), rabbit.port())
                        .credentials(rabbit.user(), rabbit.password()).build())
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(observer)
                .subscribe(Subscription.builder(rabbit.queueAddress(requests), e -> {
                    runs.incrementAndGet();
                    e.reply(OutgoingMessage.of("pong " + e.body(String.class)));
                }).name("requests").build())
                .start();
             Sender sender = requester.connection().openSender(rabbit.queueAddress(requests));
             Receiver replies = requester.connection().openReceiver(replyTo)) {
            for (int i = 0; i < count; i++) {
                Message<Object> request = Message.<Object>create("ping " + i).messageId("req-" + i).replyTo(replyTo);
                if (i % 2 == 1) {
                    request.correlationId("conversation-" + i); // a caller's own correlation-id wins
                }
                sender.send(request).awaitAccepted(30, TimeUnit.SECONDS);
            }
            // a redelivered request (same message-id) is a duplicate: accepted, not answered again
            sender.send(Message.<Object>create("ping 0").messageId("req-0").replyTo(replyTo))
                    .awaitAccepted(30, TimeUnit.SECONDS);

            Map<Object, Object> answers = new HashMap<>();
            List<Object> answerIds = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Delivery d = replies.receive(30, TimeUnit.SECONDS);
                assertThat(d).as("answer %d of %d", i + 1, count).isNotNull();
                Message<Object> m = d.message();
                assertThat(answers.put(m.correlationId(), m.body())).as("a second answer to %s", m.correlationId())
                        .isNull();
                answerIds.add(m.messageId());
                d.accept();
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> observer.settlements().size() >= count + 1);
            assertThat(replies.receive(1, TimeUnit.SECONDS)).as("an answer beyond one per request").isNull();

            Map<Object, Object> expected = new ConcurrentHashMap<>();
            for (int i = 0; i < count; i++) {
                expected.put(i % 2 == 1 ? "conversation-" + i : "req-" + i, "pong ping " + i);
            }
            assertThat(answers).isEqualTo(expected);
            assertThat(answerIds).as("stable, distinct message-ids on the answers").doesNotHaveDuplicates()
                    .allSatisfy(id -> assertThat(id.toString()).startsWith("acemq-"));
            assertThat(runs).as("handler runs: one per request, none for the copy").hasValue(count);
            assertThat(observer.settlements()).filteredOn(s -> s.reason() == SettleReason.DUPLICATE)
                    .singleElement().satisfies(s -> assertThat(s.outcome()).isEqualTo(Outcome.ACCEPTED));
            assertThat(rabbit.readyCount(requests)).as("requests left").isZero();
            assertThat(rabbit.readyCount(RabbitMq.deadLetterQueueName(requests))).as("dead-lettered").isZero();
        }
    }
}

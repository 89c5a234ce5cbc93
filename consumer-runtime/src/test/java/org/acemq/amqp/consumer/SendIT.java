package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.Sender;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What handlers send, on a real broker: each incoming message's sends arrive once they are accepted, with ids derived
 * from the incoming key, so a handler that fails after sending and runs again sends the same messages, and a
 * requester on a temporary queue gets its answer with its correlation-id.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SendIT extends ArtemisTestBase {

    @Test
    void eachOrderSendsItsEventOnceWithAStableIdAndThePropertiesTheHandlerSet() {
        String in = "send-orders";
        String out = "send-accepted";
        int orders = 100;
        List<MessageSpec> published = new ArrayList<>();
        for (int i = 0; i < orders; i++) {
            published.add(AmqpTestClient.message("order-" + i, "order " + i)
                    .property("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
            if (i % 10 == 0) {
                published.add(AmqpTestClient.message("order-" + i, "order " + i)); // a publisher's retry
            }
        }
        client.send(in, published);

        Map<String, String> sentIds = new ConcurrentHashMap<>();
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = E2e.consumer(broker, "send").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(Subscription.builder(in, e -> {
                    String id = e.send(out, OutgoingMessage.builder("accepted " + e.body(String.class))
                            .subject("OrderAccepted").applicationProperty("orderId", e.messageId())
                            .timeToLive(Duration.ofHours(1)).build());
                    String previous = sentIds.putIfAbsent(String.valueOf(e.messageId()), id);
                    assertThat(previous).as("a rerun sends the same id").isIn(null, id);
                    if (failedOnce.add(String.valueOf(e.messageId())) && e.messageId().toString().endsWith("7")) {
                        throw new IllegalStateException("test: fails after sending, the first time");
                    }
                }).concurrency(4).retryBackoff(RetryBackoff.none()).build())
                .start()) {
            await().atMost(Duration.ofSeconds(30)).until(() ->
                    observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == orders
                            && observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == orders / 10
                            && broker.messageCount(in) == 0);
        }
        List<ReceivedMessage> events = client.receiveAll(out, Duration.ofMillis(500));
        assertThat(events).hasSize(orders);
        assertThat(events).extracting(m -> String.valueOf(m.messageId())).doesNotHaveDuplicates()
                .containsExactlyInAnyOrderElementsOf(sentIds.values());
        ReceivedMessage first = events.stream().filter(m -> "order-3".equals(m.properties().get("orderId")))
                .findFirst().orElseThrow();
        assertThat(first.messageId()).isEqualTo(sentIds.get("order-3"));
        assertThat(first.bodyAsString()).isEqualTo("accepted order 3");
        assertThat(first.durable()).isTrue();
        assertThat(first.properties()).as("the trace context goes on")
                .containsEntry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
        assertThat(broker.messageCount(in)).isZero();
    }

    @Test
    void aRequesterOnATemporaryQueueGetsItsAnswerWithItsCorrelationId() throws Exception {
        String in = "send-requests";
        try (AmqpConsumer consumer = E2e.consumer(broker, "replier").store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(in, e -> e.reply(OutgoingMessage.of("pong " + e.body(String.class))))
                        .build())
                .start();
             Receiver replies = client.connection().openDynamicReceiver();
             Sender requests = client.connection().openSender(in)) {
            String replyTo = replies.address();
            assertThat(replyTo).as("the broker named a temporary queue").isNotBlank();
            requests.send(Message.create("ping 1").messageId("req-1").replyTo(replyTo)).awaitAccepted();
            requests.send(Message.create("ping 2").messageId("req-2").correlationId("conversation-2")
                    .replyTo(replyTo)).awaitAccepted();

            Map<Object, Object> answers = new ConcurrentHashMap<>();
            for (int i = 0; i < 2; i++) {
                Delivery d = replies.receive(20, TimeUnit.SECONDS);
                assertThat(d).as("answer " + (i + 1)).isNotNull();
                Message<Object> m = d.message();
                answers.put(m.correlationId(), m.body());
                d.accept();
            }
            assertThat(answers).containsEntry("req-1", "pong ping 1").containsEntry("conversation-2", "pong ping 2");
        }
    }
}

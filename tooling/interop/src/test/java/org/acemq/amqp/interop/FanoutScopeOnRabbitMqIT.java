package org.acemq.amqp.interop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMq;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scopes on RabbitMQ ({@link RabbitMqProvider}): a fanout exchange bound to two durable queues, one
 * consumer with a subscription on each queue, the in-memory store and default key settings. Each handler runs once
 * per event (each queue's address is a scope of its own), and copies published again are absorbed in each queue.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class FanoutScopeOnRabbitMqIT {

    private static final int EVENTS = 100;

    @Test
    void aFanoutExchangeToTwoQueuesRunsEachHandlerOncePerEventAndCopiesAreAbsorbedInEachQueue() {
        RabbitMq rabbit = RabbitMqProvider.shared();
        String run = UUID.randomUUID().toString().substring(0, 6);
        String exchange = "interop.events." + run;
        String billingQueue = "interop.events." + run + ".billing";
        String auditQueue = "interop.events." + run + ".audit";
        rabbit.declareFanout(exchange, billingQueue, auditQueue);

        Map<String, AtomicInteger> billing = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> audit = new ConcurrentHashMap<>();
        RecordingObserver observer = new RecordingObserver();
        ConnectionSettings connection = ConnectionSettings.builder(rabbit.host(), rabbit.port())
                .credentials(rabbit.user(), rabbit.password()).build();
        try (AmqpConsumer consumer = AmqpConsumer.builder().name("fan-out").connection(connection)
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(observer)
                .subscribe(Subscription.builder(rabbit.queueAddress(billingQueue), e -> billing
                        .computeIfAbsent(String.valueOf(e.messageId()), k -> new AtomicInteger()).incrementAndGet())
                        .name("billing").build())
                .subscribe(Subscription.builder(rabbit.queueAddress(auditQueue), e -> audit
                        .computeIfAbsent(String.valueOf(e.messageId()), k -> new AtomicInteger()).incrementAndGet())
                        .name("audit").build())
                .start();
             AmqpTestClient publisher = AmqpTestClient.connect(rabbit.host(), rabbit.port(), rabbit.user(),
                     rabbit.password())) {
            await().atMost(Duration.ofSeconds(60)).until(() -> consumer.health().healthy()
                    && rabbit.consumerCount(billingQueue) == 1 && rabbit.consumerCount(auditQueue) == 1);

            String toExchange = rabbit.exchangeAddress(exchange);
            publisher.sendBatch(toExchange, EVENTS, i -> "event-" + i, i -> "payload-" + i);
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    observer.count("billing", Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS
                            && observer.count("audit", Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS);

            // the publisher sends every event again: both queues get the copies, each absorbs its own
            publisher.sendBatch(toExchange, EVENTS, i -> "event-" + i, i -> "payload-" + i);
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    observer.count("billing", Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS
                            && observer.count("audit", Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);

            // copies sent to one queue only
            publisher.sendBatch(rabbit.queueAddress(billingQueue), 10, i -> "event-" + i, i -> "payload-" + i);
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    observer.count("billing", Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS + 10);
            await().until(() -> rabbit.readyCount(billingQueue) == 0 && rabbit.readyCount(auditQueue) == 0);
        }
        assertThat(billing).as("billing handler runs per event").hasSize(EVENTS)
                .allSatisfy((id, n) -> assertThat(n).hasValue(1));
        assertThat(audit).as("audit handler runs per event").hasSize(EVENTS)
                .allSatisfy((id, n) -> assertThat(n).hasValue(1));
        assertThat(observer.settlements()).extracting(s -> s.subscription() + "/" + s.outcome() + "/" + s.reason())
                .containsOnly(
                "billing/ACCEPTED/PROCESSED", "billing/ACCEPTED/DUPLICATE",
                "audit/ACCEPTED/PROCESSED", "audit/ACCEPTED/DUPLICATE");
        assertThat(observer.count("audit", Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(EVENTS);
        // each queue's address is the scope of its keys
        String billingScope = MessageIds.escapeScope(rabbit.queueAddress(billingQueue));
        String auditScope = MessageIds.escapeScope(rabbit.queueAddress(auditQueue));
        assertThat(observer.settlements()).filteredOn(s -> s.subscription().equals("billing"))
                .allSatisfy(s -> assertThat(s.key()).startsWith(billingScope + "|"));
        assertThat(observer.settlements()).filteredOn(s -> s.subscription().equals("audit"))
                .allSatisfy(s -> assertThat(s.key()).startsWith(auditScope + "|"));
        assertThat(rabbit.readyCount(RabbitMq.deadLetterQueueName(billingQueue))).isZero();
        assertThat(rabbit.readyCount(RabbitMq.deadLetterQueueName(auditQueue))).isZero();
    }
}

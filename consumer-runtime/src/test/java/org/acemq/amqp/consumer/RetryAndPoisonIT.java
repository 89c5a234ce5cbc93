package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Transient failures, poison messages, permanent failures and crash loops, end to end. The broker's own delivery limit
 * is 100, far above the subscription's {@code maxAttempts} of 3, so a message that reaches {@code DLQ.<queue>} after
 * exactly 3 handler runs was rejected by the runtime's count, not by Artemis.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RetryAndPoisonIT extends ArtemisTestBase {

    private static final int MAX_ATTEMPTS = 3;

    private static Subscription.Builder subscription(String q, org.acemq.amqp.api.MessageHandler handler) {
        return Subscription.builder(q, handler).maxAttempts(MAX_ATTEMPTS).inProgressDelay(E2e.IN_PROGRESS_DELAY);
    }

    private static String dlq(String q) {
        return EmbeddedArtemis.deadLetterQueueName(q);
    }

    @Test
    void transientFailuresAreRedeliveredWithARisingDeliveryCountAndSucceedLater() {
        String q = "retry-transient";
        List<Long> deliveryCounts = new CopyOnWriteArrayList<>();
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        E2e.Effects effects = new E2e.Effects();
        RecordingObserver observer = new RecordingObserver();
        client.send(q, AmqpTestClient.message("flaky-1", "try me"));
        try (AmqpConsumer consumer = E2e.consumer(broker, "retry").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(subscription(q, e -> {
                    deliveryCounts.add(e.deliveryCount());
                    attempts.add(e.attempt());
                    if (e.attempt() < MAX_ATTEMPTS) {
                        throw new IllegalStateException("downstream busy, attempt " + e.attempt());
                    }
                    effects.record(e.id());
                }).build())
                .start()) {
            await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
            await().until(() -> broker.messageCount(q) == 0);
        }
        // modified(delivery-failed=true): the broker counted each failed attempt in the header delivery-count.
        assertThat(deliveryCounts).containsExactly(0L, 1L, 2L);
        assertThat(attempts).containsExactly(1, 2, 3);
        assertThat(effects.of(q + "|s:flaky-1")).isEqualTo(1);
        assertThat(observer.count(Outcome.MODIFIED, SettleReason.FAILED)).isEqualTo(2);
        assertThat(observer.settlements()).hasSize(3);
        assertThat(broker.messageCount(dlq(q))).isZero();
    }

    @Test
    void aPoisonMessageIsRejectedToTheDeadLetterQueueAfterMaxAttemptsCountedByTheRuntime() {
        String q = "retry-poison";
        AtomicInteger runs = new AtomicInteger();
        List<Long> deliveryCounts = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        client.send(q, AmqpTestClient.message("poison-1", "always fails"), AmqpTestClient.message("fine-1", "ok"));
        try (AmqpConsumer consumer = E2e.consumer(broker, "poison").store(store).observer(observer)
                .subscribe(subscription(q, e -> {
                    if (e.id().equals(q + "|s:poison-1")) {
                        runs.incrementAndGet();
                        deliveryCounts.add(e.deliveryCount());
                        throw new IllegalArgumentException("cannot parse");
                    }
                }).build())
                .start()) {
            await().until(() -> broker.messageCount(dlq(q)) == 1 && broker.messageCount(q) == 0);
            await().until(() -> observer.count(Outcome.REJECTED, SettleReason.POISON) == 1);
            assertThat(runs).as("handler runs of the poison message").hasValue(MAX_ATTEMPTS);
            assertThat(deliveryCounts).containsExactly(0L, 1L, 2L);
            assertThat(observer.count(Outcome.MODIFIED, SettleReason.FAILED)).isEqualTo(MAX_ATTEMPTS - 1);
            assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
            // the observer learns which message each settlement was for, whichever thread settled it
            assertThat(observer.keys(Outcome.REJECTED, SettleReason.POISON)).containsExactly(q + "|s:poison-1");
            assertThat(observer.keys(Outcome.ACCEPTED, SettleReason.PROCESSED)).containsExactly(q + "|s:fine-1");
            // The claim was released, not confirmed: an operator may re-drive the message after a fix.
            assertThat(store.isConfirmed(q + "|s:poison-1")).isFalse();
            assertThat(store.attempts(q + "|s:poison-1")).isEqualTo(MAX_ATTEMPTS);
        }
        List<ReceivedMessage> dead = client.drain(dlq(q));
        assertThat(dead).extracting(ReceivedMessage::messageId).containsExactly("poison-1");
        // Artemis 2.55 does not keep the rejection's error condition or description on the dead-lettered message
        // (only x-opt-ORIG-* annotations), so the condition is asserted through the observer's reason above:
        // POISON is always sent as rejected(acemq:max-attempts-exceeded).
        assertThat(dead.get(0).annotations()).containsEntry("x-opt-ORIG-QUEUE", q);
    }

    @Test
    void aPermanentFailureIsRejectedToTheDeadLetterQueueAtOnce() {
        String q = "retry-permanent";
        AtomicInteger runs = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        client.send(q, AmqpTestClient.message("bad-1", "refers to a deleted customer"));
        try (AmqpConsumer consumer = E2e.consumer(broker, "permanent").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(subscription(q, e -> {
                    runs.incrementAndGet();
                    throw new PermanentMessageException("acemq:unknown-customer", "customer 42 does not exist", null);
                }).build())
                .start()) {
            await().until(() -> broker.messageCount(dlq(q)) == 1 && broker.messageCount(q) == 0);
            await().until(() -> observer.count(Outcome.REJECTED, SettleReason.PERMANENT) == 1);
        }
        assertThat(runs).as("handler runs").hasValue(1);
        assertThat(observer.settlements()).hasSize(1);
        assertThat(client.drain(dlq(q))).extracting(ReceivedMessage::messageId).containsExactly("bad-1");
    }

    @Test
    void aMessageThatCrashLoopedItsConsumersIsRejectedWithoutRunningTheHandler() {
        String q = "retry-crash-loop";
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        // Earlier consumer processes claimed the message MAX_ATTEMPTS times and died (or gave up) each time:
        // a crash does not reliably bump the broker's delivery-count, the store's attempt count survives.
        InMemoryIdempotencyStore crashed = store.newPeer();
        for (int i = 0; i < MAX_ATTEMPTS; i++) {
            Claim claim = crashed.acquire(q + "|s:crasher-1");
            assertThat(claim.claimed()).isTrue();
            assertThat(crashed.release(claim)).isTrue();
        }
        assertThat(store.attempts(q + "|s:crasher-1")).isEqualTo(MAX_ATTEMPTS);

        AtomicInteger runs = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        client.send(q, AmqpTestClient.message("crasher-1", "takes the JVM down"));
        try (AmqpConsumer consumer = E2e.consumer(broker, "crash-loop").store(store).observer(observer)
                .subscribe(subscription(q, e -> runs.incrementAndGet()).build())
                .start()) {
            await().until(() -> broker.messageCount(dlq(q)) == 1 && broker.messageCount(q) == 0);
            await().until(() -> observer.count(Outcome.REJECTED, SettleReason.POISON) == 1);
        }
        assertThat(runs).as("handler runs").hasValue(0);
        assertThat(observer.claims()).containsExactly(ClaimResult.CLAIMED);
        assertThat(store.isConfirmed(q + "|s:crasher-1")).isFalse();
        assertThat(client.drain(dlq(q))).extracting(ReceivedMessage::messageId).containsExactly("crasher-1");
    }
}

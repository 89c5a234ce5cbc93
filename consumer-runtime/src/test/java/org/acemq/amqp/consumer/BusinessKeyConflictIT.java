package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Business-key conflicts, on embedded Artemis with the in-memory store: a subscription keyed by a business property
 * absorbs a publisher's retry that carries a new message-id; a copy with the same key and another body is a conflict,
 * counted and logged by default, rejected (and dead-lettered) when the subscription chooses so, and detected by a new
 * consumer instance on the same store after a restart.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BusinessKeyConflictIT extends ArtemisTestBase {

    private static final String KEY_O1_SUFFIX = "|p:orderId=s:o-1";

    static MessageSpec order(String messageId, String orderId, String body) {
        return AmqpTestClient.message(messageId, body).property("orderId", orderId);
    }

    private static AmqpConsumer start(String q, InMemoryIdempotencyStore store, Fingerprint fingerprint,
                                      List<String> handled, ConsumerObserver observer) {
        return E2e.consumer(broker, "orders-service").store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> handled.add(e.body(String.class))).name("orders")
                        .key(KeySource.applicationProperty("orderId")).fingerprint(fingerprint).build())
                .start();
    }

    private static double deliveries(SimpleMeterRegistry registry, String outcome, String reason) {
        Counter c = registry.find("acemq.consumer.deliveries")
                .tags("subscription", "orders", "outcome", outcome, "reason", reason).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void aRetryWithANewMessageIdIsAbsorbedAndADifferingCopyIsCountedAndLoggedAlsoAfterARestart() {
        String q = "bk.orders";
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        List<String> handled = new CopyOnWriteArrayList<>();
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        RecordingObserver first = new RecordingObserver(MicrometerObserver.of(registry));
        RecordingObserver second = new RecordingObserver(MicrometerObserver.of(registry));
        try (StandardErrorTee log = new StandardErrorTee()) {
            try (AmqpConsumer consumer = start(q, store, Fingerprint.body(), handled, first)) {
                client.send(q, order("msg-1", "o-1", "o-1: 3 books"), order("msg-2", "o-2", "o-2: 1 pen"));
                await().until(() -> first.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 2);

                // the publisher retries order o-1 with a new message-id: the same business event, absorbed
                client.send(q, order("msg-1-retry", "o-1", "o-1: 3 books"));
                await().until(() -> first.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
                assertThat(first.conflicts()).isEmpty();

                // the same order id with another body: a conflict, settled as a copy (accepted), counted, logged
                client.send(q, order("msg-1-changed", "o-1", "o-1: 4 books"));
                await().until(() -> first.count(Outcome.ACCEPTED, SettleReason.CONFLICT) == 1);
                assertThat(consumer.health().healthy()).isTrue();
            }
            assertThat(first.conflicts()).hasSize(1);
            RecordingObserver.Conflict conflict = first.conflicts().get(0);
            assertThat(conflict.subscription()).isEqualTo("orders");
            assertThat(conflict.key()).isEqualTo(q + KEY_O1_SUFFIX);
            assertThat(conflict.recordedFingerprint()).matches("[0-9a-f]{32}");
            assertThat(conflict.fingerprint()).matches("[0-9a-f]{32}").isNotEqualTo(conflict.recordedFingerprint());
            assertThat(deliveries(registry, "accepted", "conflict")).isEqualTo(1.0);
            assertThat(log.lines("arrived with fingerprint")).singleElement().satisfies(line -> assertThat(line)
                    .contains("WARN").contains("o-1").contains(conflict.fingerprint())
                    .contains(conflict.recordedFingerprint()));

            // a new consumer instance on the same store (the service restarted) still knows what o-1 held
            try (AmqpConsumer consumer = start(q, store, Fingerprint.body(), handled, second)) {
                client.send(q, order("msg-1-changed-again", "o-1", "o-1: 5 books"),
                        order("msg-1-retry-again", "o-1", "o-1: 3 books"));
                await().until(() -> second.count(Outcome.ACCEPTED, SettleReason.CONFLICT) == 1
                        && second.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
                assertThat(consumer.health().healthy()).isTrue();
            }
            assertThat(second.conflicts()).singleElement().satisfies(c -> {
                assertThat(c.key()).isEqualTo(q + KEY_O1_SUFFIX);
                assertThat(c.recordedFingerprint()).isEqualTo(conflict.recordedFingerprint());
                assertThat(c.fingerprint()).isNotEqualTo(conflict.recordedFingerprint())
                        .isNotEqualTo(conflict.fingerprint());
            });
            assertThat(deliveries(registry, "accepted", "conflict")).isEqualTo(2.0);
            assertThat(log.lines("arrived with fingerprint")).hasSize(2);
        }
        assertThat(handled).as("the handler ran once per order, with the first body").containsExactlyInAnyOrder(
                "o-1: 3 books", "o-2: 1 pen");
        assertThat(broker.messageCount(q)).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void aSubscriptionThatRejectsConflictsDeadLettersTheDifferingCopyAlsoAfterARestart() {
        String q = "bk.strict-orders";
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        List<String> handled = new CopyOnWriteArrayList<>();
        Fingerprint strict = Fingerprint.body().onConflict(Fingerprint.Action.REJECT);
        RecordingObserver first = new RecordingObserver();
        RecordingObserver second = new RecordingObserver();
        try (StandardErrorTee log = new StandardErrorTee()) {
            try (AmqpConsumer consumer = start(q, store, strict, handled, first)) {
                client.send(q, order("msg-1", "o-1", "o-1: 3 books"));
                await().until(() -> first.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                client.send(q, order("msg-1-changed", "o-1", "o-1: 4 books"),
                        order("msg-1-retry", "o-1", "o-1: 3 books"));
                await().until(() -> first.count(Outcome.REJECTED, SettleReason.CONFLICT) == 1
                        && first.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
            }
            try (AmqpConsumer consumer = start(q, store, strict, handled, second)) {
                client.send(q, order("msg-1-changed-after-restart", "o-1", "o-1: 5 books"));
                await().until(() -> second.count(Outcome.REJECTED, SettleReason.CONFLICT) == 1);
            }
            assertThat(log.lines("arrived with fingerprint")).hasSize(2)
                    .allSatisfy(line -> assertThat(line).contains("WARN").contains("it is rejected").contains("o-1"));
        }
        assertThat(first.conflicts()).hasSize(1);
        assertThat(second.conflicts()).singleElement().satisfies(c -> assertThat(c.recordedFingerprint())
                .isEqualTo(first.conflicts().get(0).recordedFingerprint()));
        assertThat(handled).containsExactly("o-1: 3 books");

        // Artemis dead-letters a rejected message: both differing copies are there, with their own bodies
        String dlq = EmbeddedArtemis.deadLetterQueueName(q);
        await().until(() -> broker.messageCount(dlq) == 2);
        List<ReceivedMessage> dead = client.drain(dlq);
        assertThat(dead).extracting(ReceivedMessage::messageId)
                .containsExactlyInAnyOrder("msg-1-changed", "msg-1-changed-after-restart");
        assertThat(dead).extracting(ReceivedMessage::bodyAsString)
                .containsExactlyInAnyOrder("o-1: 4 books", "o-1: 5 books");
        assertThat(dead).allSatisfy(m -> assertThat(m.annotations()).containsEntry("x-opt-ORIG-QUEUE", q));
        assertThat(broker.messageCount(q)).isZero();
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A subscription's {@link RejectionHandler} on a real broker: consulted before every rejection with the message, the
 * exception and the reason; an {@code ACCEPT} settles the message accepted (not dead-lettered, its claim confirmed),
 * and a handler that throws lets the rejection proceed, so the message reaches the dead-letter queue as without one.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RejectionHandlerIT extends ArtemisTestBase {

    private static final int MAX_ATTEMPTS = 2;

    /** What the application publishes to its parking queue: the message, with the exception's class and message. */
    private static AmqpTestClient.MessageSpec parked(RejectionHandler.Rejection r) {
        String body = r.envelope().map(e -> e.body(String.class)).orElse("<none>");
        Object id = r.envelope().map(e -> e.messageId()).orElse(null);
        return AmqpTestClient.message(id, body)
                .property("x-reason", r.reason().name())
                .property("x-condition", r.condition())
                .property("x-exception-class", r.failure().map(t -> t.getClass().getName()).orElse(""))
                .property("x-exception-message", r.failure().map(Throwable::getMessage).orElse(""));
    }

    @Test
    void aHandlerThatAcceptsTakesPoisonAndPermanentFailuresOverAndNothingIsDeadLettered() {
        String q = "rejection-accept";
        String parking = q + "-parking";
        List<RejectionHandler.Rejection> consulted = new CopyOnWriteArrayList<>();
        Map<String, Integer> runs = new ConcurrentHashMap<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        client.send(q, AmqpTestClient.message("poison-1", "always fails"),
                AmqpTestClient.message("permanent-1", "invalid order"), AmqpTestClient.message("fine-1", "ok"));
        try (AmqpTestClient publisher = AmqpTestClient.connect(broker);
                AmqpConsumer consumer = E2e.consumer(broker, "rejection-accept").store(store).observer(observer)
                        .subscribe(Subscription.builder(q, e -> {
                            runs.merge(e.id(), 1, Integer::sum);
                            switch (e.body(String.class)) {
                                case "always fails" -> throw new IllegalStateException("stock service down");
                                case "invalid order" -> throw new PermanentMessageException("order has no lines");
                                default -> { }
                            }
                        }).maxAttempts(MAX_ATTEMPTS).rejectionHandler(r -> {
                            consulted.add(r);
                            publisher.send(parking, parked(r));
                            return RejectionHandler.Decision.ACCEPT;
                        }).build())
                        .start()) {
            await().until(() -> observer.settlements().size() == MAX_ATTEMPTS + 2 && broker.messageCount(q) == 0);

            assertThat(observer.keys(Outcome.ACCEPTED, SettleReason.POISON)).containsExactly(q + "|s:poison-1");
            assertThat(observer.keys(Outcome.ACCEPTED, SettleReason.PERMANENT)).containsExactly(q + "|s:permanent-1");
            assertThat(observer.keys(Outcome.ACCEPTED, SettleReason.PROCESSED)).containsExactly(q + "|s:fine-1");
            assertThat(observer.count(Outcome.REJECTED, SettleReason.POISON)
                    + observer.count(Outcome.REJECTED, SettleReason.PERMANENT)).isZero();
            assertThat(consulted).extracting(RejectionHandler.Rejection::reason)
                    .containsExactlyInAnyOrder(SettleReason.POISON, SettleReason.PERMANENT);
            RejectionHandler.Rejection poison = consulted.stream().filter(r -> r.reason() == SettleReason.POISON)
                    .findFirst().orElseThrow();
            assertThat(poison.subscription()).isEqualTo(q);
            assertThat(poison.condition()).isEqualTo(RejectionConditions.MAX_ATTEMPTS_EXCEEDED);
            assertThat(poison.failure()).get().isInstanceOf(IllegalStateException.class)
                    .extracting(Throwable::getMessage).isEqualTo("stock service down");
            assertThat(poison.envelope()).get().satisfies(e -> {
                assertThat(e.id()).isEqualTo(q + "|s:poison-1");
                assertThat(e.attempt()).isEqualTo(MAX_ATTEMPTS);
            });
            RejectionHandler.Rejection permanent = consulted.stream()
                    .filter(r -> r.reason() == SettleReason.PERMANENT).findFirst().orElseThrow();
            assertThat(permanent.condition()).isEqualTo(RejectionConditions.PERMANENT_FAILURE);
            assertThat(permanent.description()).contains("order has no lines");
            assertThat(permanent.failure()).get().isInstanceOf(PermanentMessageException.class);

            // taken over means done: the claims are confirmed, so a copy is a duplicate and not handed over again
            assertThat(store.isConfirmed(q + "|s:poison-1")).isTrue();
            assertThat(store.isConfirmed(q + "|s:permanent-1")).isTrue();
            client.send(q, AmqpTestClient.message("poison-1", "always fails"));
            await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
            assertThat(consulted).hasSize(2);
            assertThat(runs).containsEntry(q + "|s:poison-1", MAX_ATTEMPTS).containsEntry(q + "|s:permanent-1", 1);
        }
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).as("nothing dead-lettered").isZero();
        List<ReceivedMessage> inParking = client.receive(parking, 2, AmqpTestClient.DEFAULT_TIMEOUT);
        assertThat(inParking).extracting(ReceivedMessage::messageId)
                .containsExactlyInAnyOrder("poison-1", "permanent-1");
        ReceivedMessage parkedPoison = inParking.stream().filter(m -> m.messageId().equals("poison-1")).findFirst()
                .orElseThrow();
        assertThat(parkedPoison.properties()).containsEntry("x-reason", "POISON")
                .containsEntry("x-exception-class", IllegalStateException.class.getName())
                .containsEntry("x-exception-message", "stock service down");
        assertThat(parkedPoison.bodyAsString()).isEqualTo("always fails");
    }

    @Test
    void whenTheHandlerThrowsTheRejectionProceedsAndTheMessageIsDeadLettered() {
        String q = "rejection-throws";
        List<RejectionHandler.Rejection> consulted = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        client.send(q, AmqpTestClient.message("permanent-1", "invalid order"));
        client.send(q, AmqpTestClient.message("no id here")); // no message-id: rejected before any handler runs
        try (AmqpConsumer consumer = E2e.consumer(broker, "rejection-throws").store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> {
                    throw new PermanentMessageException("order has no lines");
                }).rejectionHandler(r -> {
                    consulted.add(r);
                    throw new IllegalStateException("parking queue unreachable");
                }).build())
                .start()) {
            await().until(() -> observer.settlements().size() == 2);
            assertThat(observer.keys(Outcome.REJECTED, SettleReason.PERMANENT)).containsExactly(q + "|s:permanent-1");
            assertThat(observer.count(Outcome.REJECTED, SettleReason.MISSING_ID)).isEqualTo(1);
            assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PERMANENT)
                    + observer.count(Outcome.ACCEPTED, SettleReason.MISSING_ID)).isZero();
            assertThat(store.isConfirmed(q + "|s:permanent-1")).as("the claim was released, as without a handler")
                    .isFalse();
        }
        assertThat(consulted).extracting(RejectionHandler.Rejection::reason)
                .containsExactlyInAnyOrder(SettleReason.PERMANENT, SettleReason.MISSING_ID);
        RejectionHandler.Rejection missing = consulted.stream().filter(r -> r.reason() == SettleReason.MISSING_ID)
                .findFirst().orElseThrow();
        assertThat(missing.envelope()).as("no key: no envelope").isEmpty();
        assertThat(missing.failure()).isEmpty();
        assertThat(missing.condition()).isEqualTo(RejectionConditions.MISSING_MESSAGE_ID);
        await().until(() -> broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == 2);
        assertThat(client.drain(EmbeddedArtemis.deadLetterQueueName(q))).extracting(ReceivedMessage::bodyAsString)
                .containsExactlyInAnyOrder("invalid order", "no id here");
    }
}

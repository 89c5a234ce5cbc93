package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two consumer processes (two {@link AmqpConsumer}s, each with its own owner over one shared store state) on one
 * queue. While the first is still handling a message, a copy of it that reaches the second must go back to the broker
 * (released, IN_PROGRESS) and never be accepted, because accepting it would lose the message should the first one
 * fail. Once the first finishes, the copy is absorbed as a DUPLICATE.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InProgressIT extends ArtemisTestBase {

    private final CountDownLatch finishFirst = new CountDownLatch(1);

    @AfterEach
    void unblock() {
        finishFirst.countDown();
    }

    @Test
    void aCopyOfAMessageBeingHandledElsewhereIsReleasedUntilTheFirstFinishesThenAcceptedAsDuplicate() {
        String q = "in-progress";
        InMemoryIdempotencyStore storeA = InMemoryIdempotencyStore.ofDefaults();
        InMemoryIdempotencyStore storeB = storeA.newPeer();
        assertThat(storeB.owner()).isNotEqualTo(storeA.owner());
        E2e.Effects effects = new E2e.Effects();
        CountDownLatch firstStarted = new CountDownLatch(1);
        AtomicInteger runsOnB = new AtomicInteger();
        RecordingObserver observerA = new RecordingObserver();
        RecordingObserver observerB = new RecordingObserver();

        // A: one handler thread and no prefetch, so while it is busy the broker can give the copy only to B.
        try (AmqpConsumer a = E2e.consumer(broker, "consumer-a").store(storeA).observer(observerA)
                .subscribe(Subscription.builder(q, e -> {
                    firstStarted.countDown();
                    E2e.await(finishFirst);
                    effects.record(e.id());
                }).concurrency(1).prefetch(0).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start()) {
            client.send(q, AmqpTestClient.message("payment-1", "charge 10 EUR"));
            E2e.await(firstStarted);

            try (AmqpConsumer b = E2e.consumer(broker, "consumer-b").store(storeB).observer(observerB)
                    .subscribe(Subscription.builder(q, e -> {
                        runsOnB.incrementAndGet();
                        effects.record(e.id());
                    }).concurrency(2).prefetch(5).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                    .start()) {
                // The publisher retries: the same message-id again, while A is still working on the first copy.
                client.send(q, AmqpTestClient.message("payment-1", "charge 10 EUR"));

                // B keeps getting the copy and keeps giving it back; it never accepts it and never runs it.
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> observerB.count(Outcome.RELEASED, SettleReason.IN_PROGRESS) >= 3);
                assertThat(observerB.claims()).containsOnly(ClaimResult.IN_PROGRESS);
                assertThat(observerB.settlements()).allSatisfy(s -> {
                    assertThat(s.outcome()).isEqualTo(Outcome.RELEASED);
                    assertThat(s.reason()).isEqualTo(SettleReason.IN_PROGRESS);
                });
                assertThat(runsOnB).hasValue(0);
                assertThat(firstStarted.getCount()).isZero();
                assertThat(observerA.settlements()).as("A is still working").isEmpty();
                assertThat(broker.messageCount(q)).as("original (held by A) and its copy").isEqualTo(2);

                finishFirst.countDown();

                await().until(() -> observerA.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                // The released copy goes back to the queue; whichever consumer gets it next absorbs it.
                await().until(() -> observerA.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)
                        + observerB.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
                await().until(() -> broker.messageCount(q) == 0);
            }
        }
        assertThat(effects.of(q + "|s:payment-1")).as("effects of payment-1").isEqualTo(1);
        assertThat(effects.total()).isEqualTo(1);
        assertThat(runsOnB).hasValue(0);
        assertThat(observerB.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isZero();
        assertThat(observerB.settlements()).filteredOn(s -> s.outcome() == Outcome.ACCEPTED)
                .allSatisfy(s -> assertThat(s.reason()).isEqualTo(SettleReason.DUPLICATE));
        assertThat(storeA.isConfirmed(q + "|s:payment-1")).isTrue();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }
}

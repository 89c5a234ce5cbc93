package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The idempotency store goes away (FAIL_CLOSED, the default): no handler runs without a claim, deliveries go back to
 * the broker instead of being lost, the consumer pauses, and it resumes by itself when the store answers again.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StoreOutageIT extends ArtemisTestBase {

    @Test
    void aStoreOutageMidRunReleasesDeliveriesPausesAndResumesWithEveryMessageHandledOnce() {
        String q = "outage-mid-run";
        int total = 200;
        int beforeOutage = 50;
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        // Each claim needs a permit: the test decides about how many claims happen before the outage (a batch of
        // claims that would go past it waits whole).
        store.hold(StoreOperation.CLAIM);
        store.allow(StoreOperation.CLAIM, beforeOutage);
        E2e.Effects effects = new E2e.Effects();
        AtomicInteger unclaimedRuns = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        client.sendBatch(q, total, i -> "evt-" + i);

        try (AmqpConsumer consumer = E2e.consumer(broker, "outage").store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> {
                    if (!store.holdsClaim(e.id())) {
                        unclaimedRuns.incrementAndGet();
                    }
                    effects.record(e.id());
                }).concurrency(2).prefetch(20).build())
                .start()) {
            // Everything claimed is handled, and the intake waits inside its next claim call; the store goes down
            // under it.
            await().until(() -> store.waiting(StoreOperation.CLAIM) == 1
                    && observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == store.claimed());
            int processedBefore = store.claimed();
            assertThat(processedBefore).isPositive().isLessThanOrEqualTo(beforeOutage);
            store.down(true);
            store.open(StoreOperation.CLAIM);

            await().until(() -> consumer.health().paused());
            assertThat(consumer.health().storeReachable()).isFalse();
            assertThat(consumer.health().lastError()).contains("store");
            assertThat(observer.pauses()).containsExactly(true);
            // Everything received is given back (released, not counted), nothing is handled, nothing is lost.
            await().until(() -> broker.deliveringCount(q) == 0 && broker.messageCount(q) == total - processedBefore);
            assertThat(observer.count(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE)).isPositive();
            await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5))
                    .until(() -> effects.total() == processedBefore
                            && broker.messageCount(q) == total - processedBefore);
            assertThat(observer.settlements()).filteredOn(s -> s.reason() == SettleReason.STORE_UNAVAILABLE)
                    .allSatisfy(s -> assertThat(s.outcome()).isEqualTo(Outcome.RELEASED));

            store.down(false);
            await().until(() -> !consumer.health().paused());
            assertThat(observer.pauses()).containsExactly(true, false);
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == total);
            await().until(() -> broker.messageCount(q) == 0);
            assertThat(consumer.health().storeReachable()).isTrue();
        }
        assertThat(unclaimedRuns).as("handler runs without a live claim").hasValue(0);
        assertThat(effects.total()).isEqualTo(total);
        assertThat(effects.ids()).hasSize(total);
        assertThat(effects.repeated()).isEmpty();
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void aConsumerStartedWhileTheStoreIsDownStartsPausedAndProcessesNothingUntilItAnswers() {
        String q = "outage-at-start";
        int total = 50;
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        store.down(true);
        E2e.Effects effects = new E2e.Effects();
        RecordingObserver observer = new RecordingObserver();
        client.sendBatch(q, total, i -> "early-" + i);

        try (AmqpConsumer consumer = E2e.consumer(broker, "paused-start").store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> effects.record(e.id())).concurrency(2).prefetch(20).build())
                .start()) {
            await().until(() -> consumer.health().paused());
            assertThat(observer.pauses()).containsExactly(true);
            // No credit is granted while paused: the broker delivers nothing, the store is only probed.
            await().during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(5)).until(() ->
                    effects.total() == 0 && broker.deliveringCount(q) == 0 && broker.messageCount(q) == total
                            && consumer.health().paused());
            assertThat(consumer.health().subscriptions().get(0).credit()).isZero();
            assertThat(observer.settlements()).isEmpty();
            assertThat(observer.claims()).isEmpty();
            assertThat(store.failures(StoreOperation.PROBE)).isPositive();

            store.down(false);
            await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == total);
            await().until(() -> broker.messageCount(q) == 0);
            assertThat(observer.pauses()).containsExactly(true, false);
        }
        assertThat(effects.total()).isEqualTo(total);
        assertThat(effects.repeated()).isEmpty();
    }
}

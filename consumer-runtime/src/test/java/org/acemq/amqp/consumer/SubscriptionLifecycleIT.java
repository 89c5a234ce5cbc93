package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One subscription stopped, started, paused and resumed through {@link SubscriptionControl} while the consumer runs,
 * on embedded Artemis: nothing is lost or handled twice, a stop waits for running handlers and detaches the link, a
 * pause takes the credit back, and the other subscriptions go on.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SubscriptionLifecycleIT extends ArtemisTestBase {

    @Test
    void aSubscriptionStoppedWhileMessagesFlowLetsItsRunningHandlerFinishAndLosesAndRepeatsNothing() throws Exception {
        String q = "lifecycle-stop";
        int first = 200;
        int second = 50;
        E2e.Effects effects = new E2e.Effects();
        CountDownLatch blockedEntered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        client.sendBatch(q, first, i -> "evt-" + i);
        try (AmqpConsumer consumer = E2e.consumer(broker, "lifecycle-stop")
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(q, e -> {
                    if ("evt-40".equals(e.messageId())) {
                        blockedEntered.countDown();
                        E2e.awaitUninterruptibly(release, Duration.ofSeconds(30));
                    }
                    effects.record(e.id());
                }).concurrency(2).prefetch(20).build())
                .start()) {
            SubscriptionControl control = consumer.subscription(q);
            assertThat(control.isStopped()).isFalse();
            E2e.await(blockedEntered);

            CompletableFuture<Boolean> stopped = CompletableFuture.supplyAsync(control::stop);
            await().until(control::isStopped);
            assertThat(stopped).isNotDone(); // it waits for the handler that runs evt-40
            release.countDown();
            assertThat(stopped.get(20, TimeUnit.SECONDS)).isTrue();
            assertThat(effects.ids()).hasSizeGreaterThan(40);

            // The link is gone; everything not handled is back on the queue, and stays there.
            await().until(() -> broker.consumerCount(q) == 0 && broker.deliveringCount(q) == 0);
            int handled = effects.total();
            assertThat(handled).isLessThan(first);
            assertThat(broker.messageCount(q)).isEqualTo(first - handled);
            client.sendBatch(q, second, i -> "late-" + i);
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> effects.total() == handled && broker.messageCount(q) == first + second - handled);
            assertThat(consumer.health().subscriptions().get(0).attached()).isFalse();

            control.start();
            assertThat(control.isStopped()).isFalse();
            await().atMost(Duration.ofSeconds(30)).until(() -> effects.total() == first + second);
            await().until(() -> broker.messageCount(q) == 0);
            assertThat(consumer.health().subscriptions().get(0).attached()).isTrue();
            assertThat(broker.consumerCount(q)).isEqualTo(1);

            control.stop(); // stopping again after a start works the same way
            await().until(() -> broker.consumerCount(q) == 0);
            control.start();
            await().until(() -> broker.consumerCount(q) == 1);
        }
        assertThat(effects.ids()).hasSize(first + second);
        assertThat(effects.repeated()).isEmpty();
    }

    @Test
    void aPausedSubscriptionGivesItsCreditBackAndTakesNothingWhileTheOtherGoesOn() {
        String paused = "lifecycle-paused";
        String other = "lifecycle-other";
        E2e.Effects effects = new E2e.Effects();
        E2e.Effects otherEffects = new E2e.Effects();
        try (AmqpConsumer consumer = E2e.consumer(broker, "lifecycle-pause")
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(paused, e -> effects.record(e.id())).prefetch(10).build())
                .subscribe(Subscription.builder(other, e -> otherEffects.record(e.id())).build())
                .start()) {
            SubscriptionControl control = consumer.subscription(paused);
            await().until(() -> consumer.health().subscriptions().get(0).attached()
                    && consumer.health().subscriptions().get(0).credit() > 0);

            control.pause();
            assertThat(control.isPaused()).isTrue();
            await().until(() -> consumer.health().subscriptions().get(0).credit() == 0);
            client.sendBatch(paused, 30, i -> "p-" + i);
            client.sendBatch(other, 30, i -> "o-" + i);
            await().until(() -> otherEffects.total() == 30);
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> effects.total() == 0 && broker.messageCount(paused) == 30
                            && broker.deliveringCount(paused) == 0);
            assertThat(consumer.health().subscriptions().get(0).attached()).isTrue();

            control.resume();
            assertThat(control.isPaused()).isFalse();
            await().until(() -> effects.total() == 30 && broker.messageCount(paused) == 0);
        }
        assertThat(effects.repeated()).isEmpty();
    }

    @Test
    void aSubscriptionStoppedBeforeItsMessagesArriveTakesNothingUntilStarted() {
        String q = "lifecycle-before";
        E2e.Effects effects = new E2e.Effects();
        try (AmqpConsumer consumer = E2e.consumer(broker, "lifecycle-before")
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(q, e -> effects.record(e.id())).build())
                .start()) {
            await().until(() -> broker.consumerCount(q) == 1);
            assertThat(consumer.subscription(q).stop(Duration.ofSeconds(5))).isTrue();
            client.sendBatch(q, 10, i -> "b-" + i);
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> effects.total() == 0 && broker.messageCount(q) == 10);
            consumer.subscription(q).start();
            await().until(() -> effects.total() == 10);
        }
    }

    @Test
    void aSubscriptionWithoutAutoStartupConsumesNothingUntilStarted() {
        String q = "lifecycle-manual";
        E2e.Effects effects = new E2e.Effects();
        client.sendBatch(q, 10, i -> "m-" + i);
        try (AmqpConsumer consumer = E2e.consumer(broker, "lifecycle-manual")
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(q, e -> effects.record(e.id())).autoStartup(false).build())
                .start()) {
            assertThat(consumer.subscription(q).isStopped()).isTrue();
            await().until(() -> consumer.health().connected());
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> effects.total() == 0 && broker.consumerCount(q) == 0 && broker.messageCount(q) == 10);
            consumer.subscription(q).start();
            await().until(() -> effects.total() == 10 && broker.messageCount(q) == 0);
        }
    }

    @Test
    void onlyAtLeastOnceSubscriptionsCanBeStoppedAndUnknownNamesAreRefused() {
        String q = "lifecycle-at-most-once";
        try (AmqpConsumer consumer = E2e.consumer(broker, "lifecycle-refused")
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(q, e -> { })
                        .acknowledgementMode(AcknowledgementMode.AT_MOST_ONCE).build())
                .start()) {
            assertThatThrownBy(() -> consumer.subscription(q).stop())
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("AT_MOST_ONCE").hasMessageContaining("pause()");
            assertThatThrownBy(() -> consumer.subscription("nope"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no subscription named 'nope'");
            consumer.subscription(q).pause();
            assertThat(consumer.subscription(q).isPaused()).isTrue();
            consumer.subscription(q).resume();
            assertThat(consumer.subscription(q).isPaused()).isFalse();
        }
    }
}

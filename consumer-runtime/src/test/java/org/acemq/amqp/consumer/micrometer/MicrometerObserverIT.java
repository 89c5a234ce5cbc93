package org.acemq.amqp.consumer.micrometer;

import static org.acemq.amqp.testsupport.AmqpTestClient.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Drives real deliveries through an embedded Artemis broker and reads every kind of {@link AcemqMeter} back from a
 * real {@link SimpleMeterRegistry}.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class MicrometerObserverIT {

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void startBroker() {
        // The broker must not dead-letter before the consumer's own attempt limit decides.
        broker = EmbeddedArtemis.builder().maxDeliveryAttempts(20).build().start();
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

    private static ConnectionSettings.Builder settings() {
        return ConnectionSettings.builder(broker.host(), broker.port());
    }

    @Test
    void countsEveryOutcomeClaimHandlerRunAndStoreCallOfRealDeliveries() {
        String queue = "metrics-outcomes";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        // Another owner holds a live claim on "busy-1": its copy is IN_PROGRESS until that owner confirms it.
        InMemoryIdempotencyStore otherOwner = store.newPeer();
        var busyClaim = otherOwner.acquire(queue + "|s:busy-1");
        AtomicBoolean flakyFailed = new AtomicBoolean();
        Subscription subscription = Subscription.builder(queue, e -> {
            switch (e.body(String.class)) {
                case "flaky" -> {
                    if (flakyFailed.compareAndSet(false, true)) {
                        throw new IllegalStateException("transient");
                    }
                }
                case "poison" -> throw new IllegalStateException("always");
                case "bad" -> throw new PermanentMessageException("acme:bad", "bad message", null);
                default -> { }
            }
        }).name("orders").maxAttempts(2).inProgressDelay(Duration.ofMillis(50)).build();

        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings().build()).store(store)
                .observer(metrics).subscribe(subscription).start()) {
            metrics.bindTo(consumer);
            client.send(queue, message("new-1", "ok"), message("new-1", "ok"), message("flaky-1", "flaky"),
                    message("poison-1", "poison"), message("bad-1", "bad"), message("busy-1", "ok"));

            await().atMost(Duration.ofSeconds(30)).until(() -> deliveries(registry, "accepted", "processed") == 2
                    && deliveries(registry, "accepted", "duplicate") == 1
                    && deliveries(registry, "rejected", "poison") == 1
                    && deliveries(registry, "rejected", "permanent") == 1
                    && deliveries(registry, "released", "in_progress") >= 1);
            otherOwner.confirm(busyClaim);
            await().atMost(Duration.ofSeconds(30)).until(() -> deliveries(registry, "accepted", "duplicate") == 2);
            await().until(() -> broker.messageCount(queue) == 0);

            assertThat(deliveries(registry, "modified", "failed")).isEqualTo(2); // flaky once, poison once
            assertThat(counter(registry, "acemq.consumer.poison", "subscription", "orders")).isEqualTo(1);
            assertThat(counter(registry, "acemq.consumer.abandoned", "subscription", "orders")).isZero();
            assertThat(counter(registry, "acemq.consumer.store.bypassed", "subscription", "orders")).isZero();

            // new-1, flaky-1 twice, poison-1 twice, bad-1
            assertThat(claims(registry, "claimed")).isEqualTo(6);
            assertThat(claims(registry, "already_confirmed")).isEqualTo(2); // new-1's copy, busy-1 after confirm
            assertThat(claims(registry, "in_progress")).isEqualTo(deliveries(registry, "released", "in_progress"));
            assertThat(claims(registry, "error")).isZero();

            Timer ok = timer(registry, "acemq.consumer.handler.duration", "subscription", "orders", "result",
                    "success");
            Timer failed = timer(registry, "acemq.consumer.handler.duration", "subscription", "orders", "result",
                    "failure");
            assertThat(ok.count()).isEqualTo(2); // new-1, flaky-1 second attempt
            assertThat(failed.count()).isEqualTo(4); // flaky-1 first attempt, poison-1 twice, bad-1
            assertThat(ok.totalTime(TimeUnit.NANOSECONDS)).isPositive();

            Timer claimCalls = timer(registry, "acemq.store.operation.duration", "operation", "claim", "result",
                    "success");
            assertThat(claimCalls.count()).isEqualTo((long) (claims(registry, "claimed")
                    + claims(registry, "already_confirmed") + claims(registry, "in_progress")));
            assertThat(timer(registry, "acemq.store.operation.duration", "operation", "confirm", "result", "success")
                    .count()).isEqualTo(2);
            assertThat(timer(registry, "acemq.store.operation.duration", "operation", "release", "result", "success")
                    .count()).isEqualTo(4);
            assertThat(counter(registry, "acemq.store.errors", "operation", "claim")).isZero();

            await().until(() -> gauge(registry, "acemq.consumer.inflight", "subscription", "orders") == 0);
            assertThat(gauge(registry, "acemq.consumer.connected")).isEqualTo(1);
            assertThat(gauge(registry, "acemq.consumer.paused")).isZero();
            assertThat(gauge(registry, "acemq.store.reachable")).isEqualTo(1);
            assertThat(gauge(registry, "acemq.consumer.attached", "subscription", "orders")).isEqualTo(1);
            // every finished delivery's slot is granted again, in batches of at least a quarter of the window
            await().until(() -> gauge(registry, "acemq.consumer.credit", "subscription", "orders")
                    > subscription.maxInFlight() - Math.max(1, subscription.maxInFlight() / 4));
        }
    }

    @Test
    void gaugesFollowInFlightWorkClaimAgeAndTheConnection() throws Exception {
        String queue = "metrics-gauges";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        CountDownLatch release = new CountDownLatch(1);
        Subscription subscription = Subscription.builder(queue, e -> release.await()).name("slow").prefetch(10)
                .build();
        try (AmqpConsumer consumer = AmqpConsumer.builder()
                .connection(settings().reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(200)).build())
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(metrics).subscribe(subscription).start()) {
            metrics.bindTo(consumer);
            await().until(() -> gauge(registry, "acemq.consumer.credit", "subscription", "slow") == 11);
            try {
                runSlowDeliveries(registry, consumer, queue, release);
            } finally {
                release.countDown();
            }

            await().until(() -> gauge(registry, "acemq.consumer.inflight", "subscription", "slow") == 0);
            assertThat(gauge(registry, "acemq.consumer.claim.oldest.age", "subscription", "slow")).isZero();
            assertThat(gauge(registry, "acemq.consumer.inflight.oldest.age", "subscription", "slow")).isZero();

            broker.stop();
            try {
                await().until(() -> gauge(registry, "acemq.consumer.connected") == 0);
                ConsumerHealth reconnecting = consumer.health();
                assertThat(reconnecting.state()).isEqualTo(ConsumerHealth.State.RUNNING);
                assertThat(reconnecting.connected()).isFalse();
                assertThat(reconnecting.lastError()).startsWith("connection:");
                assertThat(reconnecting.subscriptions().get(0).attached()).isFalse();
                assertThat(reconnecting.healthy()).isFalse();
                assertThat(gauge(registry, "acemq.consumer.attached", "subscription", "slow")).isZero();
                assertThat(counter(registry, "acemq.consumer.connection.interruptions")).isEqualTo(1);
            } finally {
                broker.start();
                client.close();
                client = AmqpTestClient.connect(broker);
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> gauge(registry, "acemq.consumer.connected") == 1
                    && gauge(registry, "acemq.consumer.attached", "subscription", "slow") == 1);
            assertThat(consumer.health().healthy()).isTrue();
        }
        assertThat(gauge(registry, "acemq.consumer.connected")).isZero();
    }


    private static void runSlowDeliveries(SimpleMeterRegistry registry, AmqpConsumer consumer, String queue,
                                          CountDownLatch release) {
        client.send(queue, message("slow-1", "x"), message("slow-2", "y"));
        await().until(() -> gauge(registry, "acemq.consumer.inflight", "subscription", "slow") == 2);
        await().until(() -> gauge(registry, "acemq.consumer.claim.oldest.age", "subscription", "slow") >= 0.2);
        assertThat(gauge(registry, "acemq.consumer.inflight.oldest.age", "subscription", "slow"))
                .isGreaterThanOrEqualTo(0.2);
        ConsumerHealth.SubscriptionHealth busy = consumer.health().subscriptions().get(0);
        assertThat(busy.oldestInFlight()).isGreaterThanOrEqualTo(busy.oldestClaim());
        assertThat(gauge(registry, "acemq.consumer.credit", "subscription", "slow")).isEqualTo(9);
        release.countDown();
    }

    @Test
    void deliveriesClaimedAheadAndReleasedAtShutdownAreCountedOnce() throws Exception {
        String queue = "metrics-shutdown";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch slow = new CountDownLatch(1);
        AtomicInteger slowStarted = new AtomicInteger();
        Subscription subscription = Subscription.builder(queue, e -> {
            String body = e.body(String.class);
            if (body.equals("gate")) {
                gate.await();
            } else if (body.startsWith("m-")) {
                slowStarted.incrementAndGet();
                slow.await();
            }
        }).name("closing").concurrency(1).prefetch(10).build();
        // A ticker that stands still: the warm-up handlers take no time, so the intake claims a whole batch ahead.
        AmqpConsumer consumer = AmqpConsumer.builder().connection(settings().build())
                .store(InMemoryIdempotencyStore.ofDefaults()).ticker(() -> 0L).observer(metrics)
                .subscribe(subscription).start();
        try {
            metrics.bindTo(consumer);
            client.sendBatch(queue, 20, i -> "w-" + i);
            await().until(() -> counter(registry, "acemq.consumer.deliveries", "subscription", "closing", "outcome",
                    "accepted", "reason", "processed") == 20);
            client.send(queue, message("gate", "gate"));
            await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 1);
            client.send(queue, message("m-1", "m-1"), message("m-2", "m-2"), message("m-3", "m-3"),
                    message("m-4", "m-4"), message("m-5", "m-5"), message("m-6", "m-6"));
            await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 7);
            gate.countDown();
            // m-1 runs (and blocks); m-2..m-6 were claimed with it and wait for the thread
            await().until(() -> slowStarted.get() == 1
                    && claimsOf(registry, "closing", "claimed") == 27);

            CompletableFuture<Boolean> closing = CompletableFuture.supplyAsync(() -> consumer.close(
                    Duration.ofSeconds(20)));
            await().until(() -> counter(registry, "acemq.consumer.deliveries", "subscription", "closing", "outcome",
                    "released", "reason", "shutdown") == 5);
            slow.countDown();
            assertThat(closing.get(30, TimeUnit.SECONDS)).isTrue();
        } finally {
            gate.countDown();
            slow.countDown();
            consumer.close();
        }
        assertThat(counter(registry, "acemq.consumer.deliveries", "subscription", "closing", "outcome", "released",
                "reason", "shutdown")).isEqualTo(5);
        assertThat(counter(registry, "acemq.consumer.deliveries", "subscription", "closing", "outcome", "accepted",
                "reason", "processed")).isEqualTo(22); // warm-up, gate, m-1
        assertThat(counter(registry, "acemq.consumer.abandoned", "subscription", "closing")).isZero();
        assertThat(registry.find("acemq.consumer.deliveries").tag("subscription", "closing").counters().stream()
                .mapToDouble(Counter::count).sum()).as("every delivery counted once").isEqualTo(27);
        // m-1..m-6 were claimed with one store call and m-2..m-6 released with another
        var claimKeys = registry.get("acemq.store.operation.keys").tags("operation", "claim").summary();
        assertThat(claimKeys.max()).isEqualTo(6);
        assertThat(claimKeys.totalAmount()).isEqualTo(27);
        assertThat(claimKeys.count()).isEqualTo(timer(registry, "acemq.store.operation.duration", "operation",
                "claim", "result", "success").count()).isLessThan(27);
        var releaseKeys = registry.get("acemq.store.operation.keys").tags("operation", "release").summary();
        assertThat(releaseKeys.count()).isEqualTo(1);
        assertThat(releaseKeys.totalAmount()).isEqualTo(5);
        await().until(() -> broker.deliveringCount(queue) == 0 && broker.messageCount(queue) == 5);
    }

    @Test
    void aDetachedLinkShowsAsNotAttachedUntilItIsReattached() {
        String queue = "metrics-detach";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings().build())
                .store(InMemoryIdempotencyStore.ofDefaults()).observer(metrics).subscribe(queue, e -> { }).start()) {
            metrics.bindTo(consumer);
            assertThatThrownBy(() -> metrics.bindTo(consumer)).isInstanceOf(IllegalStateException.class);
            await().until(() -> broker.consumerCount(queue) == 1);
            assertThat(broker.detachConsumers(queue)).isEqualTo(1);
            // re-attaching waits 100 ms first: poll faster than that
            await().pollInterval(Duration.ofMillis(2)).atMost(Duration.ofSeconds(10))
                    .until(() -> !consumer.health().subscriptions().get(0).attached());
            assertThat(consumer.health().connected()).isTrue();
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> gauge(registry, "acemq.consumer.attached", "subscription", queue) == 1);
            await().until(() -> broker.consumerCount(queue) == 1);
        }
    }

    @Test
    void anUnreachableStorePausesCountsErrorsAndResumes() {
        String queue = "metrics-store-down";
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings().build()).store(store.plainStore())
                .storeRetryDelay(Duration.ofMillis(50), Duration.ofMillis(100))
                .observer(metrics).subscribe(queue, e -> { }).start()) {
            metrics.bindTo(consumer);
            await().until(() -> consumer.health().healthy()); // started in the background: connected and attached
            store.down(true);
            client.send(queue, message("down-1", "x"));
            await().until(() -> gauge(registry, "acemq.consumer.paused") == 1);
            assertThat(gauge(registry, "acemq.store.reachable")).isZero();
            assertThat(consumer.health().lastError()).startsWith("store:");
            assertThat(counter(registry, "acemq.store.errors", "operation", "claim")).isEqualTo(1);
            assertThat(claimsOf(registry, queue, "error")).isEqualTo(1);
            await().until(() -> counter(registry, "acemq.consumer.deliveries", "subscription", queue, "outcome",
                    "released", "reason", "store_unavailable") >= 1);
            await().until(() -> counter(registry, "acemq.store.errors", "operation", "probe") >= 1);

            store.down(false);
            await().until(() -> gauge(registry, "acemq.consumer.paused") == 0);
            await().until(() -> counter(registry, "acemq.consumer.deliveries", "subscription", queue, "outcome",
                    "accepted", "reason", "processed") == 1);
            assertThat(gauge(registry, "acemq.store.reachable")).isEqualTo(1);
            assertThat(timer(registry, "acemq.store.operation.duration", "operation", "probe", "result", "failure")
                    .count()).isPositive();
        }
    }

    // ------------------------------------------------------------------ reading meters back

    private static double deliveries(SimpleMeterRegistry registry, String outcome, String reason) {
        return counter(registry, "acemq.consumer.deliveries", "subscription", "orders", "outcome", outcome, "reason",
                reason);
    }

    private static double claims(SimpleMeterRegistry registry, String result) {
        return claimsOf(registry, "orders", result);
    }

    private static double claimsOf(SimpleMeterRegistry registry, String subscription, String result) {
        return counter(registry, "acemq.consumer.claims", "subscription", subscription, "result", result);
    }

    private static double counter(SimpleMeterRegistry registry, String name, String... tags) {
        Counter c = registry.find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    private static Timer timer(SimpleMeterRegistry registry, String name, String... tags) {
        Timer t = registry.find(name).tags(tags).timer();
        assertThat(t).as(name + " " + String.join(",", tags)).isNotNull();
        return t;
    }

    private static double gauge(SimpleMeterRegistry registry, String name, String... tags) {
        Gauge g = registry.find(name).tags(tags).gauge();
        if (g == null) {
            var tg = registry.find(name).tags(tags).timeGauge();
            assertThat(tg).as(name + " " + String.join(",", tags)).isNotNull();
            return tg.value(TimeUnit.SECONDS);
        }
        return g.value();
    }
}

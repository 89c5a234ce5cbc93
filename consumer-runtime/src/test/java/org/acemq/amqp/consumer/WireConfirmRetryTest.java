package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A handler succeeded but the store fails to record the confirm. The runtime keeps the delivery unsettled and retries
 * the confirm for {@code confirmTimeout}; a store that answers within that time loses nothing, so a later duplicate
 * is absorbed instead of running the handler again (found by the reliability harness: with a fixed three quick
 * tries, a short PostgreSQL outage left the claim unconfirmed and the next copy ran the handler a second time).
 */
@Timeout(30)
class WireConfirmRetryTest {

    private static final int LINK = 0;

    @Test
    void confirmFailingForAWhileIsRetriedUntilRecordedThenTheDuplicateIsAbsorbed() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        store.failNext(StoreOperation.CONFIRM, 6);
        AtomicInteger handled = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withHandle(LINK).respond();
            peer.expectFlow().withHandle(LINK).withLinkCredit(2);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 50, 1, 1);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .storeRetryDelay(Duration.ofMillis(20), Duration.ofMillis(50))
                    .subscribe(Subscription.builder("orders", e -> handled.incrementAndGet())
                            .concurrency(1).prefetch(1).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4); // open, begin, attach, flow
                WireLog.transfer(peer, 0, LINK, 0, encoded("order-1", "first"));
                await().until(() -> "accepted".equals(wire.outcome(0, 0)));
                assertThat(store.failures()).isEqualTo(6);
                assertThat(store.isConfirmed("orders|s:order-1")).isTrue();
                await().untilAsserted(() ->
                        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1));

                await().until(() -> !consumer.health().paused() && consumer.health().subscriptions().get(0).credit() > 0);
                WireLog.transfer(peer, 0, LINK, 1, encoded("order-1", "first"));
                await().until(() -> "accepted".equals(wire.outcome(0, 1)));
                await().untilAsserted(() ->
                        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1));
                assertThat(handled).hasValue(1);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void confirmStillFailingAtTheTimeoutIsAcceptedAnywayBecauseTheWorkIsDone() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        store.failNext(StoreOperation.CONFIRM, Integer.MAX_VALUE);
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withHandle(LINK).respond();
            peer.expectFlow().withHandle(LINK).withLinkCredit(2);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 50, 1, 1);
            peer.start();

            long start = System.nanoTime();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .confirmTimeout(Duration.ofMillis(400))
                    .subscribe(Subscription.builder("orders", e -> { }).concurrency(1).prefetch(1).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4); // open, begin, attach, flow
                WireLog.transfer(peer, 0, LINK, 0, encoded("order-2", "x"));
                await().until(() -> "accepted".equals(wire.outcome(0, 0)));
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
                assertThat(store.failures()).isGreaterThan(3);
                assertThat(store.isConfirmed("orders|s:order-2")).isFalse();
                // reported once the disposition was handed over, which the peer can see first
                await().untilAsserted(() ->
                        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1));
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }
}

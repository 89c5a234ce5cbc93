package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two outcomes {@code OutcomePolicy} decides away from the handler's result, on the wire: a confirm the store refuses
 * for the key (the README's "refuses the key when the confirm is recorded" row: accepted at once, not retried, nothing
 * paused), and an unexpected failure inside the consumer (a linkage error from the store: released, the handler not
 * run, the next message handled as usual).
 */
@Timeout(30)
class WireUnrecordedAndUnexpectedTest {

    private static final int LINK = 0;

    @Test
    void aConfirmRefusedForItsKeyIsAcceptedAtOnceWithoutRetryingAndNothingPauses() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        store.refuseConfirmOf("orders|s:order-3");
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
                    .subscribe(Subscription.builder("orders", e -> handled.incrementAndGet())
                            .concurrency(1).prefetch(1).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4); // open, begin, attach, flow
                WireLog.transfer(peer, 0, LINK, 0, encoded("order-3", "x"));
                await().until(() -> "accepted".equals(wire.outcome(0, 0)));
                assertThat(store.refusedConfirms()).as("asked once: a refused key is never retried").isEqualTo(1);
                assertThat(store.isConfirmed("orders|s:order-3")).isFalse();
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
                assertThat(consumer.health().paused()).isFalse();

                WireLog.transfer(peer, 0, LINK, 1, encoded("order-4", "y"));
                await().until(() -> "accepted".equals(wire.outcome(0, 1)));
                assertThat(store.isConfirmed("orders|s:order-4")).isTrue();
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
                assertThat(handled).hasValue(2);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void anUnexpectedErrorFromTheStoreReleasesTheDeliveryWithoutRunningItsHandler() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        store.failWith(StoreOperation.CLAIM, new NoClassDefFoundError("test: a class the store needs is missing"));
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
                    .subscribe(Subscription.builder("orders", e -> handled.incrementAndGet())
                            .concurrency(1).prefetch(1).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4); // open, begin, attach, flow
                WireLog.transfer(peer, 0, LINK, 0, encoded("order-5", "x"));
                await().until(() -> "released".equals(wire.outcome(0, 0)));
                assertThat(observer.count(Outcome.RELEASED, SettleReason.FAILED)).isEqualTo(1);
                assertThat(handled).hasValue(0);

                store.failWith(StoreOperation.CLAIM, null);
                await().until(() -> consumer.health().subscriptions().get(0).credit() > 0);
                WireLog.transfer(peer, 0, LINK, 1, encoded("order-6", "y"));
                await().until(() -> "accepted".equals(wire.outcome(0, 1)));
                assertThat(handled).hasValue(1);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }
}

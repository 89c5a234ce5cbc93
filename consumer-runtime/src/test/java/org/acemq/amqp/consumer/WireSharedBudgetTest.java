package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Capacity shared by several subscriptions must wake every one of them (QPID-8751, generalised: a change
 * of a shared condition must re-evaluate every waiter, not only the one that caused it). Two subscriptions on one
 * session: A (handle 0) and B (handle 1).
 */
@Timeout(60)
class WireSharedBudgetTest {

    private static final int A = 0;
    private static final int B = 1;

    /**
     * The scenario: maxInFlightPerConnection(10) and two subscriptions with default settings (window 101
     * each). The budget is split into fair shares from the start: 5 credits for A, 5 for B, never more. A's handler
     * blocks on its first message, so A frees nothing; B's three messages are handled all the same, without any
     * completion, drain or timer being needed. (Before, A took all 10 credits at start and B got none: B's messages
     * were never processed.)
     */
    @Test
    void twoDefaultSubscriptionsGetFairSharesSoNeitherWaitsForTheOther() throws Exception {
        CountDownLatch releaseA = new CountDownLatch(1);
        List<String> handledA = new CopyOnWriteArrayList<>();
        List<String> handledB = new CopyOnWriteArrayList<>();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withHandle(A).respond();
            peer.expectFlow().withHandle(A).withLinkCredit(5);
            peer.expectAttach().ofReceiver().withHandle(B).respond();
            peer.expectFlow().withHandle(B).withLinkCredit(5);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .maxInFlightPerConnection(10)
                    .subscribe(Subscription.builder("queue-a", e -> {
                        releaseA.await();
                        handledA.add(e.body(String.class));
                    }).name("a").sessionGroup("g").build())
                    .subscribe(Subscription.builder("queue-b", e -> handledB.add(e.body(String.class)))
                            .name("b").sessionGroup("g").build())
                    .start()) {
                await().until(() -> consumer.health().subscriptions().stream().allMatch(h -> h.credit() == 5));
                ScriptedPeer.awaitPerformatives(peer, 6); // open, begin, attach and flow of each link
                for (int i = 0; i < 3; i++) {
                    WireLog.transfer(peer, 0, A, i, encoded("a-" + i, "a-" + i));
                }
                for (int i = 3; i < 6; i++) {
                    WireLog.transfer(peer, 0, B, i, encoded("b-" + i, "b-" + i));
                }
                await().until(() -> handledB.size() == 3 && wire.dispositions.size() == 3);
                assertThat(handledA).as("A's handler still blocked: nothing of A completed").isEmpty();
                assertThat(consumer.health().subscriptions().get(0).inFlight()).isEqualTo(3);
                releaseA.countDown();
                await().until(() -> handledA.size() == 3 && wire.dispositions.size() == 6);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
            assertThat(handledB).containsExactly("b-3", "b-4", "b-5");
            assertThat(wire.dispositions).allSatisfy(d -> assertThat(d.outcome()).isEqualTo("accepted"));
            assertThat(wire.grants(A)).as("A never above its share").allSatisfy(
                    f -> assertThat(f.credit()).isLessThanOrEqualTo(5));
            assertThat(wire.grants(B)).as("B never above its share").allSatisfy(
                    f -> assertThat(f.credit()).isLessThanOrEqualTo(5));
        } finally {
            releaseA.countDown();
        }
    }

    /**
     * Capacity freed by a detach goes to the other subscription at once, and comes back by a drain when the link
     * returns. maxInFlightPerConnection(4), A and B with window 4 each: shares 2 and 2. The broker detaches B: B's
     * share is lent to A (a flow raising A to 4). B re-attaches after its back-off: A now holds more than its share,
     * so it is drained (the broker answers per spec: credit 0), and both are granted their shares again.
     */
    @Test
    void aShareFreedByADetachIsLentAndTakenBackByADrainWhenTheLinkReturns() throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withHandle(A).respond();
            peer.expectFlow().withHandle(A).withLinkCredit(2);
            peer.expectAttach().ofReceiver().withHandle(B).respond();
            peer.expectFlow().withHandle(B).withLinkCredit(2);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .maxInFlightPerConnection(4)
                    .subscribe(Subscription.builder("queue-a", e -> { })
                            .name("a").sessionGroup("g").concurrency(2).prefetch(2).build())
                    .subscribe(Subscription.builder("queue-b", e -> { })
                            .name("b").sessionGroup("g").concurrency(2).prefetch(2).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);

                peer.expectDetach().withHandle(B);
                peer.expectFlow().withHandle(A).withDrain(false).withLinkCredit(4);
                peer.expectAttach().ofReceiver().respond();
                peer.expectFlow().withHandle(A).withDrain(true).withLinkCredit(4)
                        .respond().withDrain(true).withLinkCredit(0).withDeliveryCount(4);
                WireLog wire = WireLog.acceptAnythingThenClose(peer, 50, 2, 1);
                peer.remoteDetach().withHandle(B).withClosed(false)
                        .withErrorCondition("amqp:link:detach-forced", "moved").now();
                await().until(() -> wire.grants(A).size() == 1 && wire.grants(B).size() == 1);
                assertThat(wire.grants(A).get(0).credit()).isEqualTo(2);
                assertThat(wire.grants(B).get(0).credit()).isEqualTo(2);
                await().until(() -> consumer.health().subscriptions().stream().allMatch(s -> s.attached()));
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    /**
     * The first store failure (FAIL_CLOSED) pauses the whole consumer: the failing delivery of A is released, and
     * BOTH links are drained (B never saw the failure) and get no credit while the store is down. When the store
     * answers the probe again, BOTH links are granted their full window again, and the redelivered message is
     * handled.
     */
    @Test
    void storeOutagePausesBothSubscriptionsAndResumesBoth() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        List<String> handled = new CopyOnWriteArrayList<>();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withHandle(A).respond();
            peer.expectFlow().withHandle(A).withLinkCredit(2).withDeliveryCount(0);
            peer.expectAttach().ofReceiver().withHandle(B).respond();
            peer.expectFlow().withHandle(B).withLinkCredit(2).withDeliveryCount(0);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .storeRetryDelay(Duration.ofMillis(50), Duration.ofMillis(100))
                    .subscribe(Subscription.builder("queue-a", e -> handled.add(e.body(String.class)))
                            .name("a").sessionGroup("g").concurrency(1).prefetch(1).build())
                    .subscribe(Subscription.builder("queue-b", e -> handled.add(e.body(String.class)))
                            .name("b").sessionGroup("g").concurrency(1).prefetch(1).build())
                    .start()) {
                await().until(() -> consumer.health().subscriptions().get(1).credit() == 2);
                store.down(true);
                WireLog.transfer(peer, 0, A, 0, encoded("a-0", "a-0"));
                await().until(() -> "released".equals(wire.outcome(0, 0)));
                await().until(() -> wire.drains(A).size() == 1 && wire.drains(B).size() == 1);
                assertThat(wire.drains(A).get(0).credit()).isEqualTo(1);
                assertThat(wire.drains(B).get(0).credit()).isEqualTo(2);
                assertThat(consumer.health().paused()).isTrue();
                // paused: several failed probes later, still no credit for anyone
                await().until(() -> store.failures() >= 3);
                assertThat(wire.grants(A)).isEmpty();
                assertThat(wire.grants(B)).isEmpty();

                store.down(false);
                await().until(() -> wire.grants(A).size() == 1 && wire.grants(B).size() == 1);
                assertThat(wire.grants(A).get(0).credit()).isEqualTo(2);
                assertThat(wire.grants(A).get(0).deliveryCount()).isEqualTo(2);
                assertThat(wire.grants(B).get(0).credit()).isEqualTo(2);
                assertThat(wire.grants(B).get(0).deliveryCount()).isEqualTo(2);
                assertThat(consumer.health().paused()).isFalse();

                WireLog.transfer(peer, 0, A, 1, encoded("a-0", "a-0 again"));
                WireLog.transfer(peer, 0, B, 2, encoded("b-0", "b-0"));
                await().until(() -> "accepted".equals(wire.outcome(0, 1)) && "accepted".equals(wire.outcome(0, 2)));
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
        assertThat(handled).containsExactlyInAnyOrder("a-0 again", "b-0");
        assertThat(observer.pauses()).containsExactly(true, false);
        assertThat(observer.count(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE)).isEqualTo(1);
    }
}

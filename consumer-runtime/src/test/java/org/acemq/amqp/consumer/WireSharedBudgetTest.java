package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Capacity shared by several subscriptions must wake every one of them (seed 004, QPID-8751, generalised: a change
 * of a shared condition must re-evaluate every waiter, not only the one that caused it). Two subscriptions on one
 * session: A (handle 0) and B (handle 1).
 */
@Timeout(60)
class WireSharedBudgetTest {

    private static final int A = 0;
    private static final int B = 1;

    /**
     * maxInFlightPerConnection(4), each subscription concurrency 2 + prefetch 2. A takes the whole budget at start
     * and B gets no credit at all; the peer fills A and A's handlers block: both are paused for lack of budget.
     * Then A's deliveries complete one at a time. The first freed slot goes back to A (the wake-up starts with A),
     * the second to B: ConsumerRuntime.capacityFreed wakes every subscription, from a rotating start. If only the
     * runner whose delivery finished were re-evaluated, A would take every freed slot and B would never see a flow.
     * Neither link is ever granted more than the shared budget allows.
     */
    @Test
    void capacityFreedByOneSubscriptionIsGrantedToTheOther() throws Exception {
        Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
        List<String> handledA = new CopyOnWriteArrayList<>();
        List<String> handledB = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 4; i++) {
            gates.put("a-" + i, new CountDownLatch(1));
        }
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withHandle(A).respond();
            peer.expectFlow().withHandle(A).withLinkCredit(4);
            peer.expectAttach().ofReceiver().withHandle(B).respond();
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .maxInFlightPerConnection(4)
                    .subscribe(Subscription.builder("queue-a", e -> {
                        String body = e.body(String.class);
                        gates.get(body).await();
                        handledA.add(body);
                    }).name("a").sessionGroup("g").concurrency(2).prefetch(2).build())
                    .subscribe(Subscription.builder("queue-b", e -> handledB.add(e.body(String.class)))
                            .name("b").sessionGroup("g").concurrency(2).prefetch(2).build())
                    .start()) {
                for (int i = 0; i < 4; i++) {
                    WireLog.transfer(peer, 0, A, i, encoded("a-" + i, "a-" + i));
                }
                await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 4);
                assertThat(consumer.health().subscriptions().get(1).credit()).isZero();
                assertThat(wire.flows).isEmpty();

                gates.get("a-0").countDown();
                await().until(() -> wire.grants(A).size() == 1);
                assertThat(wire.grants(A).get(0).credit()).isEqualTo(1);
                assertThat(wire.grants(B)).isEmpty();

                gates.get("a-1").countDown();
                await().until(() -> wire.grants(B).size() == 1);
                assertThat(wire.grants(B).get(0).credit()).as("B's share of the freed budget").isEqualTo(1);
                assertThat(wire.grants(A)).hasSize(1);

                // B uses its credit; its completion frees a slot in turn
                WireLog.transfer(peer, 0, B, 4, encoded("b-0", "b-0"));
                await().until(() -> handledB.size() == 1);
                gates.values().forEach(CountDownLatch::countDown);
                await().until(() -> handledA.size() == 4 && wire.dispositions.size() == 5);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
            assertThat(wire.dispositions).allSatisfy(d -> assertThat(d.outcome()).isEqualTo("accepted"));
            // A never held more than 4 in total, B never more than its share
            assertThat(wire.grants(A)).allSatisfy(f -> assertThat(f.credit()).isLessThanOrEqualTo(4));
            assertThat(wire.grants(B)).allSatisfy(f -> assertThat(f.credit()).isLessThanOrEqualTo(4));
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
        SwitchableStore store = new SwitchableStore(InMemoryIdempotencyStore.ofDefaults());
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
        assertThat(observer.pauses).containsExactly(true, false);
        assertThat(observer.count(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE)).isEqualTo(1);
    }
}

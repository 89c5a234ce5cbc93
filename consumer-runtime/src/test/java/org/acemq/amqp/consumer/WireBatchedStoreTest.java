package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.ManualTime;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testkit.MutableClock;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Rejected;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batched store path on the wire, against a scripted peer and a store whose calls the test records and holds
 * ({@link FaultInjectingStore}): what waits in the client while a claim is in flight is claimed with one call, what
 * finishes while a confirm is in flight is confirmed with one call, a lone message waits for nothing, and a delivery
 * claimed ahead that no handler thread started yet is renewed while it waits and released (never accepted) when the
 * consumer closes or its link dies.
 */
@Timeout(60)
class WireBatchedStoreTest {

    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);

    /** Handles "w-…" (warm-up) messages at once and blocks every other one until {@link #release} opens. */
    private final MessageHandler blocking = e -> {
        String body = e.body(String.class);
        if (!body.startsWith("w-")) {
            handled.add(body);
            E2e.await(release);
        }
    };

    private static void send(ProtonTestServer peer, int deliveryId, String body) {
        WireLog.transfer(peer, 0, 0, deliveryId, encoded(body, body));
    }

    private static int inFlight(AmqpConsumer consumer) {
        return consumer.health().subscriptions().get(0).inFlight();
    }

    @Test
    void aLoneMessageIsClaimedAndConfirmedAtOnceInOneCallEachWithNoTimeHavingToPass() throws Exception {
        ManualTime time = new ManualTime();
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(4 + 100);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("lone-1", "lone")).queue();
            peer.expectDisposition().withSettled(true).withState().accepted();
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).ticker(time).scheduler(time)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(4).build())
                    .start()) {
                // time never moves: a timer that waited for a batch to fill would never fire
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
                assertThat(handled).containsExactly("lone");
                assertThat(store.calls(StoreOperation.CLAIM))
                        .as("one claim call, of one key").containsExactly(1);
                await().until(() -> store.calls(StoreOperation.CONFIRM).size() == 1);
                assertThat(store.calls(StoreOperation.CONFIRM))
                        .as("one confirm call, of one claim").containsExactly(1);
                assertThat(time.read()).isZero();
                ScriptedPeer.expectGracefulClose(peer, 1, 103);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void whatArrivesDuringAClaimIsClaimedInOneCallAndWhatFinishesDuringAConfirmIsConfirmedTogether()
            throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(10 + 20);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 100, 1, 1);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(10).prefetch(20).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4);
                store.hold(StoreOperation.CLAIM);
                send(peer, 0, "m-0");
                await().until(() -> store.waiting(StoreOperation.CLAIM) == 1);
                store.hold(StoreOperation.CONFIRM);
                for (int i = 1; i <= 10; i++) {
                    send(peer, i, "m-" + i);
                }
                await().until(() -> inFlight(consumer) == 11);
                store.open(StoreOperation.CLAIM);

                await().until(() -> handled.size() == 11 && store.waiting(StoreOperation.CONFIRM) == 1);
                assertThat(store.calls(StoreOperation.CLAIM))
                        .as("m-0 alone, then the ten that waited in the client, in one call")
                        .containsExactly(1, 10);
                assertThat(wire.dispositions).as("nothing is accepted before its confirm is recorded").isEmpty();

                store.open(StoreOperation.CONFIRM);
                await().until(() -> wire.dispositions.size() == 11);
                for (int i = 0; i <= 10; i++) {
                    assertThat(wire.outcome(0, i)).isEqualTo("accepted");
                    assertThat(memory(store).isConfirmed("orders|s:m-" + i)).isTrue();
                }
                assertThat(store.calls(StoreOperation.CONFIRM).stream().mapToInt(Integer::intValue).sum())
                        .isEqualTo(11);
                assertThat(store.calls(StoreOperation.CONFIRM))
                        .as("the confirm in flight, then what finished meanwhile, together")
                        .hasSizeLessThanOrEqualTo(3);
                assertThat(store.calls(StoreOperation.RELEASE)).isEmpty();
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aKeyTheStoreRefusesInABatchIsRejectedAndTheOthersAreClaimedAgainWithoutAPause() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(4 + 10);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 100, 1, 1);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).observer(observer)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(4).prefetch(10).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4);
                store.hold(StoreOperation.CLAIM);
                send(peer, 0, "m-0");
                await().until(() -> store.waiting(StoreOperation.CLAIM) == 1);
                store.refuse("orders|s:bad");
                send(peer, 1, "m-1");
                send(peer, 2, "bad");
                send(peer, 3, "m-3");
                send(peer, 4, "m-4");
                await().until(() -> inFlight(consumer) == 5);
                store.open(StoreOperation.CLAIM);

                await().until(() -> wire.dispositions.size() == 5);
                assertThat(store.calls(StoreOperation.CLAIM))
                        .as("the batch fails whole; it is asked again without the refused key")
                        .containsExactly(1, 4, 3);
                assertThat(wire.outcome(0, 2)).isEqualTo("rejected(acemq:invalid-message-id)");
                assertThat(((Rejected) wire.disposition(0, 2).state()).getError().getDescription())
                        .contains("refused the message's key");
                for (int i : new int[] {0, 1, 3, 4}) {
                    assertThat(wire.outcome(0, i)).isEqualTo("accepted");
                }
                assertThat(handled).containsExactlyInAnyOrder("m-0", "m-1", "m-3", "m-4");
                assertThat(memory(store).attempts("orders|s:bad")).as("never claimed").isZero();
                assertThat(observer.count(Outcome.REJECTED, SettleReason.INVALID_ID)).isEqualTo(1);
                assertThat(observer.pauses()).as("a refused key is no outage").isEmpty();
                assertThat(consumer.health().paused()).isFalse();
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aStoreOutageDuringABatchReleasesEachDeliveryOnceClaimsNothingAndPauses() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(4 + 10);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 100, 1, 1);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).observer(observer)
                    .storeRetryDelay(Duration.ofSeconds(30), Duration.ofSeconds(30))
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(4).prefetch(10).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4);
                store.hold(StoreOperation.CLAIM);
                send(peer, 0, "m-0");
                await().until(() -> store.waiting(StoreOperation.CLAIM) == 1);
                for (int i = 1; i <= 4; i++) {
                    send(peer, i, "m-" + i);
                }
                await().until(() -> inFlight(consumer) == 5);
                store.allow(StoreOperation.CLAIM, 1);
                // m-0 is claimed, handled and accepted; the four that waited are claimed in one call, held
                await().until(() -> "accepted".equals(wire.outcome(0, 0)) && store.waiting(StoreOperation.CLAIM) == 1);
                store.down(true);
                store.open(StoreOperation.CLAIM);

                await().until(() -> wire.dispositions.size() == 5);
                for (int i = 1; i <= 4; i++) {
                    assertThat(wire.dispositions(0, i)).as("m-%d settled once", i).hasSize(1);
                    assertThat(wire.outcome(0, i)).isEqualTo("released");
                }
                assertThat(store.calls(StoreOperation.CLAIM)).containsExactly(1, 4);
                assertThat(observer.count(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE)).isEqualTo(4);
                assertThat(store.calls(StoreOperation.RELEASE))
                        .as("the failed call claimed nothing: nothing to release").isEmpty();
                for (int i = 1; i <= 4; i++) {
                    assertThat(memory(store).attempts("orders|s:m-" + i)).as("no attempt counted").isZero();
                }
                assertThat(handled).containsExactly("m-0");
                await().until(() -> consumer.health().paused());
                assertThat(observer.pauses()).containsExactly(true);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void closingReleasesTheClaimsOfDeliveriesNoThreadStartedInOneCallAndNeverAcceptsThem() throws Exception {
        ManualTime time = new ManualTime();
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            WireLog wire = scriptWindow(peer);
            AmqpConsumer consumer = start(peer, store, time, observer);
            try {
                claimAhead(peer, consumer, store, wire);
                CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
                // the handlers of m-0..m-3 still block; the nine that waited go back at once
                await().until(() -> wire.dispositions.size() == WARM_UP + 9);
                for (int i = 4; i <= 12; i++) {
                    assertThat(wire.outcome(0, WARM_UP + i)).as("m-%d", i).isEqualTo("released");
                    assertThat(memory(store).newPeer().acquire("orders|s:m-" + i)).as("m-%d's claim was released", i)
                            .isEqualTo(new Claim("orders|s:m-" + i, ClaimResult.CLAIMED, 2));
                }
                assertThat(store.calls(StoreOperation.RELEASE))
                        .as("released together").containsExactly(9);
                assertThat(observer.count(Outcome.RELEASED, SettleReason.SHUTDOWN)).isEqualTo(9);
                assertThat(handled).containsExactlyInAnyOrder("m-0", "m-1", "m-2", "m-3");

                release.countDown();
                closing.get(20, TimeUnit.SECONDS);
                for (int i = 0; i <= 3; i++) {
                    assertThat(wire.outcome(0, WARM_UP + i)).isEqualTo("accepted");
                }
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(WARM_UP + 4);
                assertThat(handled).hasSize(4);
            } finally {
                release.countDown();
                consumer.close();
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aDeliveryThatArrivesWhileClosingWaitsForTheHandlersIsReleasedAndCountedNotLeftToTheDetach()
            throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            // RabbitMQ 3.x answers drains against the spec, so the runtime does not drain at close: the credit it
            // granted stays with the broker, which may still use it while the handlers finish.
            peer.expectSASLAnonymousConnect();
            peer.expectOpen().respond().withProperty("product", "RabbitMQ").withProperty("version", "3.10.8");
            peer.expectBegin().respond();
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(1 + 5);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 50, 1, 1);
            peer.start();
            AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).observer(observer)
                    .shutdownTimeout(Duration.ofSeconds(20))
                    .subscribe(Subscription.builder("orders", blocking).concurrency(1).prefetch(5).build())
                    .start();
            try {
                ScriptedPeer.awaitPerformatives(peer, 4);
                send(peer, 0, "m-0");
                await().until(() -> handled.size() == 1);
                CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
                await().until(() -> consumer.health().state() == ConsumerHealth.State.STOPPING
                        && !consumer.health().subscriptions().get(0).attached());
                send(peer, 1, "m-1"); // after the intake stopped, while m-0's handler still runs
                await().until(() -> inFlight(consumer) == 2);
                release.countDown();
                closing.get(20, TimeUnit.SECONDS);
                assertThat(wire.outcome(0, 0)).isEqualTo("accepted");
                assertThat(wire.outcome(0, 1)).as("m-1 goes back with a disposition of ours").isEqualTo("released");
                assertThat(observer.count(Outcome.RELEASED, SettleReason.SHUTDOWN)).isEqualTo(1);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
                assertThat(observer.settlements()).hasSize(2);
                assertThat(observer.abandonments()).isEqualTo(0);
                assertThat(handled).containsExactly("m-0");
            } finally {
                release.countDown();
                consumer.close();
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void theLeaseOfADeliveryClaimedAheadIsRenewedWhileItWaitsForAThread() throws Exception {
        ManualTime time = new ManualTime();
        MutableClock clock = MutableClock.create();
        Duration lease = Duration.ofSeconds(30);
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.builder().lease(lease)
                .clock(clock).build());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            WireLog wire = scriptWindow(peer);
            try (AmqpConsumer consumer = start(peer, store, time, observer)) {
                claimAhead(peer, consumer, store, wire);
                for (int step = 0; step < 4; step++) { // 40 s: past the lease of every claim made at the start
                    clock.advance(Duration.ofSeconds(10));
                    time.advance(Duration.ofSeconds(10));
                }
                assertThat(store.calls(StoreOperation.RENEW).size())
                        .as("13 claims (4 running, 9 waiting) renewed every 10 s")
                        .isEqualTo(13 * 4);
                for (int i = 4; i <= 12; i++) {
                    assertThat(memory(store).newPeer().acquire("orders|s:m-" + i).result()).as("m-%d still held", i)
                            .isEqualTo(ClaimResult.IN_PROGRESS);
                }
                release.countDown();
                await().until(() -> wire.dispositions.size() == WARM_UP + 13);
                for (int i = 0; i <= 12; i++) {
                    assertThat(wire.outcome(0, WARM_UP + i)).isEqualTo("accepted");
                    assertThat(memory(store).attempts("orders|s:m-" + i)).as("never taken over").isEqualTo(1);
                }
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aDeliveryClaimedAheadWhoseLinkDiesIsReleasedNotRunAndAbandoned() throws Exception {
        ManualTime time = new ManualTime(); // no re-attach: it would wait for the scheduler
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(4 + 10);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).observer(observer)
                    .ticker(time).scheduler(time)
                    .subscribe(Subscription.builder("orders", blocking).concurrency(4).prefetch(10).build())
                    .start()) {
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
                store.hold(StoreOperation.CLAIM);
                send(peer, 0, "m-0");
                await().until(() -> store.waiting(StoreOperation.CLAIM) == 1);
                for (int i = 1; i <= 4; i++) {
                    send(peer, i, "m-" + i);
                }
                await().until(() -> inFlight(consumer) == 5);
                store.open(StoreOperation.CLAIM);
                // m-0 runs; the next intake claims m-1..m-4 (one per idle thread and the leader): three of them
                // start, m-4 waits claimed
                await().until(() -> handled.size() == 4);
                assertThat(store.calls(StoreOperation.CLAIM)).containsExactly(1, 4);

                peer.expectDetach();
                peer.remoteDetach().withClosed(true).withErrorCondition("amqp:link:detach-forced", "gone").now();
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
                release.countDown();

                await().until(() -> observer.abandonments() == 5);
                assertThat(handled).as("m-4 never ran").containsExactlyInAnyOrder("m-0", "m-1", "m-2", "m-3");
                assertThat(observer.settlements()).as("nothing can be settled on the dead link").isEmpty();
                for (int i = 0; i <= 3; i++) {
                    assertThat(memory(store).isConfirmed("orders|s:m-" + i)).as("the work done is recorded").isTrue();
                }
                assertThat(memory(store).isConfirmed("orders|s:m-4")).isFalse();
                assertThat(memory(store).newPeer().acquire("orders|s:m-4"))
                        .as("its claim was released, not left to lapse")
                        .isEqualTo(new Claim("orders|s:m-4", ClaimResult.CLAIMED, 2));
                peer.expectEnd().respond();
                peer.expectClose().respond();
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
    }

    // ------------------------------------------------------------------ claiming ahead

    private static final int WARM_UP = 20;

    /** Attach, the first flow (concurrency 4 + prefetch 20), then any flows and dispositions, then the close. */
    private static WireLog scriptWindow(ProtonTestServer peer) {
        expectConnectAndBegin(peer);
        peer.expectAttach().ofReceiver().respond();
        peer.expectFlow().withLinkCredit(4 + 20);
        WireLog wire = WireLog.acceptAnythingThenClose(peer, 200, 1, 1);
        peer.start();
        return wire;
    }

    /** @return the in-memory store under the test's store, to read what it holds past the faults */
    private static InMemoryIdempotencyStore memory(FaultInjectingStore store) {
        return (InMemoryIdempotencyStore) store.delegate();
    }

    private AmqpConsumer start(ProtonTestServer peer, FaultInjectingStore store, ManualTime time,
                               ConsumerObserver observer) {
        return ScriptedPeer.consumer(peer, store).observer(observer).ticker(time).scheduler(time)
                .shutdownTimeout(Duration.ofSeconds(20))
                .subscribe(Subscription.builder("orders", blocking).concurrency(4).prefetch(20).build())
                .start();
    }

    /**
     * Twenty warm-up messages are handled in no (moved) time, so the intake may claim a whole window ahead; then m-0
     * is claimed alone (held in the store) while twelve more arrive. Those are claimed with one call: three start on
     * the other threads, nine wait, claimed, for a thread. Every handler but the warm-up's blocks.
     */
    private void claimAhead(ProtonTestServer peer, AmqpConsumer consumer, FaultInjectingStore store, WireLog wire) {
        ScriptedPeer.awaitPerformatives(peer, 4);
        for (int i = 0; i < WARM_UP; i++) {
            send(peer, i, "w-" + i);
        }
        await().until(() -> wire.dispositions.size() == WARM_UP && wire.creditLeft(0, WARM_UP) >= 13);
        store.hold(StoreOperation.CLAIM);
        send(peer, WARM_UP, "m-0");
        await().until(() -> store.waiting(StoreOperation.CLAIM) == 1);
        for (int i = 1; i <= 12; i++) {
            send(peer, WARM_UP + i, "m-" + i);
        }
        await().until(() -> inFlight(consumer) == 13);
        int before = store.calls(StoreOperation.CLAIM).size();
        store.open(StoreOperation.CLAIM);
        await().until(() -> handled.size() == 4);
        List<Integer> claimCalls = store.calls(StoreOperation.CLAIM);
        assertThat(claimCalls.subList(before - 1, claimCalls.size())).containsExactly(1, 12);
        assertThat(consumer.health().subscriptions().get(0).inFlight()).isEqualTo(13);
    }
}

package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Accepted;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * AT_MOST_ONCE on the wire (QPID-8345: a broker that does not apply the source's default outcome to
 * pre-settled deliveries leaves them acquired for ever). The scripts are strict: the driver fails on any frame it
 * does not expect, so "no disposition" means the frame after the transfers really is the drain of the close.
 *
 * <p>Budget 20 (concurrency 1 + prefetch 19) with threshold 5: the few deliveries here never trigger a credit
 * top-up, so the only link flow after the initial grant is the close's drain.
 */
@Timeout(30)
class WireAtMostOnceTest {

    private static final int BUDGET = 20;

    private static Subscription atMostOnce(String address, org.acemq.amqp.api.MessageHandler handler) {
        return Subscription.builder(address, handler)
                .acknowledgementMode(AcknowledgementMode.AT_MOST_ONCE)
                .concurrency(1)
                .prefetch(BUDGET - 1)
                .build();
    }

    private static void transfer(ProtonTestServer peer, int id, Object messageId, String body, boolean settled) {
        peer.remoteTransfer().withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id}).withMore(false)
                .withSettled(settled).withMessageFormat(0).withPayload(encoded(messageId, body)).queue();
    }

    /**
     * Proves the attach asks for pre-settled transfers (snd-settle-mode=settled) with source default-outcome
     * accepted and outcomes [accepted], so a QPID-8345-style broker that applies the default outcome removes the
     * message instead of leaving it acquired; and that handled pre-settled deliveries put no disposition on the
     * wire: the next frame after the transfers is the close's drain. (Seed 000.)
     */
    @Test
    void attachAsksPreSettledWithAcceptedDefaultOutcomeAndNoDispositionIsEverSent() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withSenderSettleModeSettled().withReceiverSettlesFirst()
                    .withSource().withAddress("events").withDefaultOutcome(new Accepted())
                    .withOutcomes("amqp:accepted:list").and().respond();
            peer.expectFlow().withLinkCredit(BUDGET);
            transfer(peer, 0, "evt-1", "one", true);
            transfer(peer, 1, "evt-2", "two", true);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(atMostOnce("events", e -> handled.add(e.body(String.class))))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(handled).containsExactly("one", "two");
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
                // Strict: a disposition (or anything else) before this drain fails the script.
                ScriptedPeer.expectGracefulClose(peer, 2, BUDGET - 2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves at-most-once still de-duplicates through the store: the same message-id delivered twice runs the
     * handler once, the second copy is reported DUPLICATE, and neither copy gets a disposition. (Seed 000.)
     */
    @Test
    void sameMessageIdTwiceRunsTheHandlerOnceAndSendsNoDisposition() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withSenderSettleModeSettled().respond();
            peer.expectFlow().withLinkCredit(BUDGET);
            transfer(peer, 0, "evt-1", "original", true);
            transfer(peer, 1, "evt-1", "original", true);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(atMostOnce("events", e -> handled.add(e.body(String.class))))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(handled).containsExactly("original");
                assertThat(store.isConfirmed("events|s:evt-1")).isTrue();
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
                assertThat(observer.claims()).containsExactly(ClaimResult.CLAIMED, ClaimResult.ALREADY_CONFIRMED);
                ScriptedPeer.expectGracefulClose(peer, 2, BUDGET - 2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Documents the at-most-once contract: a handler failure loses the message. Nothing is sent (no release, no
     * modified: the broker already forgot it), the observer reports it settled ACCEPTED with reason FAILED, and the
     * store does not record it as done. (Seed 000.)
     */
    @Test
    void handlerFailureLosesTheMessageWithoutAnyDisposition() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withSenderSettleModeSettled().respond();
            peer.expectFlow().withLinkCredit(BUDGET);
            transfer(peer, 0, "evt-9", "boom", true);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(atMostOnce("events", e -> {
                        handled.add(e.body(String.class));
                        throw new IllegalStateException("handler failed");
                    }))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 1);
                assertThat(handled).containsExactly("boom");
                assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactly(
                        tuple("events", Outcome.ACCEPTED, SettleReason.FAILED));
                assertThat(observer.abandonments()).isEqualTo(0);
                assertThat(store.isConfirmed("events|s:evt-9")).isFalse();
                ScriptedPeer.expectGracefulClose(peer, 1, BUDGET - 1);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves that a transfer arriving UNSETTLED on the settled link (a broker ignoring snd-settle-mode=settled) is
     * settled by us with accepted after handling, so it cannot stay acquired (the QPID-8345 symptom from the other
     * side); a pre-settled transfer next to it still gets nothing. (Seed 000.)
     */
    @Test
    void unsettledTransferDespiteSettledAttachIsAcceptedByUs() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withSenderSettleModeSettled().respond();
            peer.expectFlow().withLinkCredit(BUDGET);
            transfer(peer, 0, "evt-1", "pre-settled", true);
            transfer(peer, 1, "evt-2", "unsettled", false);
            peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(atMostOnce("events", e -> handled.add(e.body(String.class))))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(handled).containsExactly("pre-settled", "unsettled");
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
                ScriptedPeer.expectGracefulClose(peer, 2, BUDGET - 2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves that at close, deliveries already received but not yet started are HANDLED in at-most-once mode: the
     * broker settled them when it sent them, so "releasing" them (as the other modes do) sends nothing and loses
     * them while reporting RELEASED. Both messages run, both are reported PROCESSED, no disposition. (Seed 000.)
     */
    @Test
    void receivedButUnstartedDeliveriesAreHandledAtCloseNotReleased() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        CountDownLatch firstEntered = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withSenderSettleModeSettled().respond();
            peer.expectFlow().withLinkCredit(BUDGET);
            transfer(peer, 0, "evt-1", "one", true);
            transfer(peer, 1, "evt-2", "two", true);
            peer.start();

            AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(atMostOnce("events", e -> {
                        handled.add(e.body(String.class));
                        if ("one".equals(e.body(String.class))) {
                            firstEntered.countDown();
                            releaseFirst.await();
                        }
                    }))
                    .start();
            CompletableFuture<Void> closing = null;
            try {
                assertThat(firstEntered.await(5, TimeUnit.SECONDS)).isTrue();
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 2);

                peer.expectFlow().withDrain(true).withLinkCredit(BUDGET - 2).withDeliveryCount(2)
                        .respond().withDrain(true).withLinkCredit(0).withDeliveryCount(BUDGET);
                closing = CompletableFuture.runAsync(consumer::close);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);

                peer.expectDetach().respond();
                peer.expectEnd().respond();
                peer.expectClose().respond();
                releaseFirst.countDown();
                closing.get(10, TimeUnit.SECONDS);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            } finally {
                releaseFirst.countDown();
                if (closing == null) {
                    consumer.close();
                }
            }
            assertThat(handled).containsExactly("one", "two");
            assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
            assertThat(observer.settlements()).hasSize(2);
        }
    }
}

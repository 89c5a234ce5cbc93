package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seed 003 (PROTON-1512): aborted transfers. An aborted delivery uses up one link credit and advances the
 * delivery-count like a real one, but protonj2's {@code Receiver} never hands it out, so with manual credit
 * ({@code creditWindow(0)}) a runtime that counts only the deliveries it receives believes credit is still
 * outstanding while the broker has none left. The runtime sees each abort through its protonj2 engine hooks and gives
 * the credit back at once (no timer); without the hooks, a periodic drain is the fallback.
 */
@Timeout(30)
class WireAbortedTransferTest {

    /**
     * A multi-frame delivery ended by aborted=true, a single payload-less aborted frame and a single aborted frame
     * that carries a whole message: none reaches the handler, none is claimed in the store, and only the real message
     * after them is handled and accepted. Every credit the aborts used is granted again (the runtime counts 5 credits
     * outstanding at the end, as many as the broker has), and no flow ever grants more than the window.
     */
    @Test
    void abortedTransfersReachNeitherTheHandlerNorTheStoreAndTheirCreditIsGrantedAgain() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        byte[] first = encoded("aborted-1", "never handled, multi-frame");
        byte[] third = encoded("aborted-3", "never handled, single frame");
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(5).withDeliveryCount(0);
            // delivery 0: two frames of a real message, then the abort
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(true)
                    .withMessageFormat(0).withPayload(Arrays.copyOfRange(first, 0, 10)).queue();
            peer.remoteTransfer().withDeliveryId(0).withMore(true)
                    .withPayload(Arrays.copyOfRange(first, 10, first.length)).queue();
            peer.remoteTransfer().withDeliveryId(0).withMore(false).withAborted(true).queue();
            // delivery 1: a single payload-less aborted frame
            peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                    .withAborted(true).withMessageFormat(0).queue();
            // delivery 2: a single aborted frame carrying a complete message
            peer.remoteTransfer().withDeliveryId(2).withDeliveryTag(new byte[] {2}).withMore(false)
                    .withAborted(true).withMessageFormat(0).withPayload(third).queue();
            // delivery 3: a real message
            peer.remoteTransfer().withDeliveryId(3).withDeliveryTag(new byte[] {3}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("order-1", "ok")).queue();
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 50, 1, 1);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(1).prefetch(4).build())
                    .start()) {
                // after all four transfers (delivery-count 4) a grant leaves the broker exactly the window again
                await().until(() -> "accepted".equals(wire.outcome(0, 3))
                        && wire.grants(0).stream().anyMatch(f -> f.deliveryCount() == 4 && f.credit() == 5)
                        && consumer.health().subscriptions().get(0).credit() == 5);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(wire.grants(0)).allSatisfy(f -> assertThat(f.credit()).isLessThanOrEqualTo(5));
            assertThat(wire.dispositions).hasSize(1);
        }
        assertThat(handled).containsExactly("ok");
        assertThat(observer.claims()).containsExactly(ClaimResult.CLAIMED);
        assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactly(
                tuple("orders", Outcome.ACCEPTED, SettleReason.PROCESSED));
        for (String key : List.of("orders|s:aborted-1", "orders|s:aborted-3")) {
            assertThat(store.attempts(key)).as("claims of %s", key).isZero();
            assertThat(store.isConfirmed(key)).as("%s confirmed", key).isFalse();
        }
        assertThat(store.isConfirmed("orders|s:order-1")).isTrue();
    }

    /**
     * Window W = concurrency 1 + prefetch 2 = 3. The peer, a broker that respects credit, sends three aborted
     * transfers (all its credit), then two more, then three real messages, each batch only once the flows it has seen
     * allow it: each abort gives its credit back at once, so the broker is never left without credit and all three
     * messages are handled, in order, with no timer involved. No flow ever grants more than W.
     */
    @Test
    void creditEatenByMoreAbortedTransfersThanTheWindowIsGivenBackAtEachAbort() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 100, 1, 1);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(1).prefetch(2).build())
                    .start()) {
                int sent = 0;
                for (int batch : new int[] {3, 2}) {
                    int from = sent;
                    await().until(() -> wire.creditLeft(0, from) >= batch);
                    for (int i = 0; i < batch; i++) {
                        WireLog.abort(peer, 0, 0, sent++);
                    }
                }
                int aborted = sent;
                await().until(() -> wire.creditLeft(0, aborted) == 3);
                for (int id = 5; id <= 7; id++) {
                    WireLog.transfer(peer, 0, 0, id, encoded("m-" + id, "m-" + id));
                }
                await().atMost(Duration.ofSeconds(10)).until(() -> handled.size() == 3
                        && consumer.health().subscriptions().get(0).credit() == 3);
                assertThat(handled).containsExactly("m-5", "m-6", "m-7");
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(wire.grants(0)).allSatisfy(f -> assertThat(f.credit()).isLessThanOrEqualTo(3));
        }
    }

    /**
     * The protection removed: with the engine hooks off ({@code acemq.engineHooks=false}) and the fallback check's
     * interval of a minute, three aborted transfers eat the whole window W = 3 while the runtime still counts 3
     * credits outstanding (health: credit 3, nothing in flight), and it never writes another flow, so a broker would
     * never send another message. The observation window (1 s) is far longer than the previous tests need.
     */
    @Test
    void withoutTheEngineHooksCreditEatenByAbortedTransfersIsNeverGrantedAgain() throws Exception {
        EngineHooksOff.run(() -> {
            try (ProtonTestServer peer = new ProtonTestServer()) {
                expectAttachThenThreeAborts(peer);
                peer.start();

                try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                        .subscribe(Subscription.builder("orders", e -> { }).concurrency(1).prefetch(2).build())
                        .start()) {
                    peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                    int performatives = peer.getPerformativeCount();
                    await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(3))
                            .until(() -> peer.getPerformativeCount() == performatives);
                    assertThat(consumer.health().subscriptions().get(0).credit()).isEqualTo(3);
                    assertThat(consumer.health().subscriptions().get(0).inFlight()).isZero();
                    // The closing drain finds no credit in the client, so it writes nothing: straight to detach.
                    peer.expectDetach().respond();
                    peer.expectEnd().respond();
                    peer.expectClose().respond();
                }
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            }
        });
    }

    /**
     * The fallback without engine hooks: a link idle with credit outstanding for {@code creditCheckInterval} (200 ms)
     * is drained and its credit counted again. First with no credit left at all (the drain is local only, nothing goes
     * on the wire, and W is granted again), then with one credit left (a real drain, answered by the peer with credit
     * 0 and the delivery-count advanced). The three real messages sent after that are all handled.
     */
    @Test
    void withoutTheEngineHooksThePeriodicCheckRecoversCreditEatenByAbortedTransfers() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        EngineHooksOff.run(() -> {
            try (ProtonTestServer peer = new ProtonTestServer()) {
                expectAttachThenThreeAborts(peer);
                // All 3 credits are gone. The idle check finds no credit in the client: it re-grants W at once.
                peer.expectFlow().withLinkCredit(3).withDeliveryCount(3);
                peer.remoteTransfer().withDeliveryId(3).withDeliveryTag(new byte[] {3}).withMore(false)
                        .withAborted(true).withMessageFormat(0).queue();
                peer.remoteTransfer().withDeliveryId(4).withDeliveryTag(new byte[] {4}).withMore(false)
                        .withAborted(true).withMessageFormat(0).queue();
                // One credit left: a real drain, which the peer answers by using it up.
                peer.expectFlow().withDrain(true).withLinkCredit(1).withDeliveryCount(5)
                        .respond().withDrain(true).withLinkCredit(0).withDeliveryCount(6);
                peer.expectFlow().withLinkCredit(3).withDeliveryCount(6);
                for (int id = 5; id <= 7; id++) {
                    peer.remoteTransfer().withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id}).withMore(false)
                            .withMessageFormat(0).withPayload(encoded("m-" + id, "m-" + id)).queue();
                }
                WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 1, 1);
                peer.start();

                try (AmqpConsumer consumer = AmqpConsumer.builder()
                        .connection(ScriptedPeer.settings(peer).build())
                        .store(InMemoryIdempotencyStore.ofDefaults())
                        .creditCheckInterval(Duration.ofMillis(200))
                        .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                                .concurrency(1).prefetch(2).build())
                        .start()) {
                    await().atMost(Duration.ofSeconds(10)).until(() -> handled.size() == 3);
                    assertThat(handled).containsExactly("m-5", "m-6", "m-7");
                    consumer.close();
                    assertThat(tail.flows).allSatisfy(f -> assertThat(f.credit()).isLessThanOrEqualTo(3));
                }
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            }
        });
    }

    /** Connect, attach, the first grant of W = 3, then three payload-less aborted transfers that use all of it. */
    private static void expectAttachThenThreeAborts(ProtonTestServer peer) {
        expectConnectAndBegin(peer);
        peer.expectAttach().ofReceiver().respond();
        peer.expectFlow().withLinkCredit(3).withDeliveryCount(0);
        for (int id = 0; id < 3; id++) {
            peer.remoteTransfer().withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id}).withMore(false)
                    .withAborted(true).withMessageFormat(0).queue();
        }
    }
}

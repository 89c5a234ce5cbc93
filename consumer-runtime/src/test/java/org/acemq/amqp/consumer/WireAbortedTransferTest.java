package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.lessThanOrEqualTo;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.primitives.UnsignedInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seed 003 (PROTON-1512): aborted transfers. An aborted delivery uses up one link credit and advances the
 * delivery-count like a real one, but protonj2's {@code Receiver} never hands it out. With manual credit
 * ({@code creditWindow(0)}) the runtime therefore cannot count them: its own count says credit is still outstanding
 * while the broker has none left. Only the idle drain + resync (a link idle with credit outstanding for
 * {@code creditCheckInterval} is drained and its credit re-counted from what the client really holds) recovers it.
 */
@Timeout(30)
class WireAbortedTransferTest {

    /**
     * A multi-frame delivery ended by aborted=true, a single payload-less aborted frame and a single aborted frame
     * that carries a whole message: none reaches the handler, none is claimed in the store, and only the real
     * message after them is handled and accepted.
     */
    @Test
    void abortedTransfersReachNeitherTheHandlerNorTheStore() throws Exception {
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
            peer.expectDisposition().withFirst(3).withSettled(true).withState().accepted();
            // The runtime counted 1 delivery out of 5 and grants 1 back; the broker really has 5 - 4 + 1 = 2.
            peer.expectFlow().withLinkCredit(2).withDeliveryCount(4);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(1).prefetch(4).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                ScriptedPeer.expectGracefulClose(peer, 4, 2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
        assertThat(handled).containsExactly("ok");
        assertThat(observer.claims).containsExactly(ClaimStatus.CLAIMED);
        assertThat(observer.settled).containsExactly(
                new RecordingObserver.Settled("orders", Outcome.ACCEPTED, SettleReason.PROCESSED));
        for (String key : List.of("s:aborted-1", "s:aborted-3")) {
            assertThat(store.attempts(key)).as("claims of %s", key).isZero();
            assertThat(store.isConfirmed(key)).as("%s confirmed", key).isFalse();
        }
        assertThat(store.isConfirmed("s:order-1")).isTrue();
    }

    /**
     * Window W = concurrency 1 + prefetch 2 = 3. The peer sends five aborted transfers, more than W: the first
     * three use up every credit while the runtime still believes 3 are outstanding, so nothing would ever be
     * granted again (see {@link #withoutTheIdleDrainCreditEatenByAbortedTransfersIsNeverGrantedAgain}). After
     * creditCheckInterval (200 ms) of idleness the runtime drains and re-counts: first with no credit left at all
     * (the drain is local only, nothing goes on the wire, and W is granted again), then with one credit left (a
     * real drain, answered by the peer with credit 0 and the delivery-count advanced). The three real messages sent
     * after that are all handled, and no flow ever grants more than W.
     */
    @Test
    void creditEatenByMoreAbortedTransfersThanTheWindowIsRecoveredByTheIdleDrain() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(3).withDeliveryCount(0);
            byte[] lost = encoded("aborted-0", "lost");
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(true)
                    .withMessageFormat(0).withPayload(lost).queue();
            peer.remoteTransfer().withDeliveryId(0).withMore(false).withAborted(true).queue();
            peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                    .withAborted(true).withMessageFormat(0).queue();
            peer.remoteTransfer().withDeliveryId(2).withDeliveryTag(new byte[] {2}).withMore(false)
                    .withAborted(true).withMessageFormat(0).queue();
            // All 3 credits are gone. The idle drain finds no credit in the client: it re-grants W at once.
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
            for (int id = 5; id <= 7; id++) {
                peer.expectDisposition().withFirst(id).withSettled(true).withState().accepted();
                // each completion frees one slot and grants it back: never more than W outstanding
                peer.expectFlow().withLinkCredit(lessThanOrEqualTo(UnsignedInteger.valueOf(3)));
            }
            // From here the link is idle with credit: idle drains every 200 ms, answered by the tolerant tail.
            WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 1, 1);
            peer.start();

            try (AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(ScriptedPeer.settings(peer).build())
                    .store(store)
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
        for (String key : List.of("s:aborted-0")) {
            assertThat(store.attempts(key)).isZero();
        }
    }

    /**
     * The same start with creditCheckInterval 1 min, i.e. without the idle drain within the observation window:
     * after three aborted transfers the runtime still counts W = 3 credits outstanding (health: credit 3, nothing in
     * flight) and never writes another flow, so a broker would never send another message. The observation window
     * (1 s) is five times the interval after which the previous test re-granted.
     */
    @Test
    void withoutTheIdleDrainCreditEatenByAbortedTransfersIsNeverGrantedAgain() throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(3).withDeliveryCount(0);
            for (int id = 0; id < 3; id++) {
                peer.remoteTransfer().withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id}).withMore(false)
                        .withAborted(true).withMessageFormat(0).queue();
            }
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
    }
}

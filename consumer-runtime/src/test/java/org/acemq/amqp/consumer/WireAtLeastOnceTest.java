package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Released;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The at-least-once path on the wire, against a scripted AMQP peer. */
@Timeout(30)
class WireAtLeastOnceTest {

    @Test
    void attachAsksUnsettledForAQueueWithReleasedDefaultOutcomeAndGrantsExactlyTheBudget() throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withSenderSettleModeUnsettled().withReceiverSettlesFirst()
                    .withSource().withAddress("orders").withDefaultOutcome(new Released())
                    .withOutcomes("amqp:accepted:list", "amqp:rejected:list", "amqp:released:list",
                            "amqp:modified:list")
                    .withCapabilities("queue")
                    .and().respond();
            peer.expectFlow().withLinkCredit(2 + 5);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .subscribe(Subscription.builder("orders", e -> { }).concurrency(2).prefetch(5).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                ScriptedPeer.expectGracefulClose(peer, 0, 7);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void newMessageIsHandledConfirmedThenAcceptedAndItsDuplicateAcceptedWithoutRunningTheHandler() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(101);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("order-1", "first")).queue();
            peer.expectDisposition().withSettled(true).withState().accepted();
            peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("order-1", "first")).queue();
            peer.expectDisposition().withSettled(true).withState().accepted();
            peer.start();

            InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe("orders", e -> handled.add(e.body(String.class)))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(handled).containsExactly("first");
                assertThat(store.isConfirmed("orders|s:order-1")).isTrue();
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
                ScriptedPeer.expectGracefulClose(peer, 2, 99);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves the close gives back, with a plain {@code released} (which brokers do not count as a failed attempt,
     * matching the attach's chosen default outcome), a delivery that arrived during the final drain and never
     * reached a handler; it is reported RELEASED/SHUTDOWN and the handler never sees it.
     */
    @Test
    void deliveryArrivingDuringTheCloseDrainIsReleasedNotModified() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(20);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .concurrency(1).prefetch(19).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                peer.expectFlow().withDrain(true).withLinkCredit(20).withDeliveryCount(0);
                peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                        .withMessageFormat(0).withPayload(encoded("order-1", "late")).queue();
                peer.remoteFlow().withDrain(true).withLinkCredit(0).withDeliveryCount(20).queue();
                peer.expectDisposition().withFirst(0).withSettled(true).withState().released();
                peer.expectDetach().respond();
                peer.expectEnd().respond();
                peer.expectClose().respond();
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(handled).isEmpty();
            assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactly(
                    tuple("orders", Outcome.RELEASED, SettleReason.SHUTDOWN));
        }
    }
}

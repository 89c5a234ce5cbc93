package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the broker implements, learned from its identity (the open frame's product and version) and from what it does.
 * The scripts are strict: an unexpected frame (a drain, a {@code modified}) fails them.
 */
@Timeout(30)
class WireBrokerProfileTest {

    private static void expectRabbitMq(ProtonTestServer peer) {
        peer.expectSASLAnonymousConnect();
        peer.expectOpen().respond().withProperty("product", "RabbitMQ").withProperty("version", "3.10.8");
        peer.expectBegin().respond();
    }

    /**
     * RabbitMQ 3.x ends the session on the first {@code modified} and answers drains against the spec (which makes
     * protonj2 fail the whole connection). Recognised from its open frame: a transient failure is {@code released},
     * a store outage pauses without draining, and close detaches without draining.
     */
    @Test
    void againstRabbitMq3TransientFailuresAreReleasedAndNothingIsEverDrained() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectRabbitMq(peer);
            peer.expectAttach().ofReceiver().withSource().withCapabilities("queue").and().respond();
            peer.expectFlow().withLinkCredit(10);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("t-1", "fails")).queue();
            peer.expectDisposition().withFirst(0).withSettled(true).withState().released();
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).observer(observer)
                    .storeRetryDelay(Duration.ofMillis(20), Duration.ofMillis(50))
                    .subscribe(Subscription.builder("/queue/orders", e -> {
                        throw new IllegalStateException("downstream unavailable");
                    }).retryBackoff(RetryBackoff.none()).concurrency(1).prefetch(9).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                // the observer hears of it just after the hand-over to the I/O thread, which may write it first
                await().untilAsserted(() -> assertThat(observer.count(Outcome.RELEASED, SettleReason.FAILED))
                        .isEqualTo(1));

                // the store goes down: paused, but the credit stays with RabbitMQ (no drain); what it sends is released
                peer.expectDisposition().withFirst(1).withSettled(true).withState().released();
                store.down(true);
                peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                        .withMessageFormat(0).withPayload(encoded("t-2", "x")).now();
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> consumer.health().paused() && store.failures(StoreOperation.PROBE) >= 2);
                // close: no drain, straight to detach
                peer.expectDetach().respond();
                peer.expectEnd().respond();
                peer.expectClose().respond();
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Without the engine hooks the runtime falls back to a periodic credit check that drains idle links; on RabbitMQ
     * 3.x, whose drain answer would make protonj2 fail the connection, it does nothing: an idle link with credit sees
     * no flow at all across many check intervals (100 ms each), and close detaches without a drain.
     */
    @Test
    void theFallbackCreditCheckNeverDrainsOnRabbitMq3() throws Exception {
        EngineHooksOff.run(() -> {
            try (ProtonTestServer peer = new ProtonTestServer()) {
                expectRabbitMq(peer);
                peer.expectAttach().ofReceiver().respond();
                peer.expectFlow().withLinkCredit(10);
                peer.start();
                try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                        .creditCheckInterval(Duration.ofMillis(100))
                        .subscribe(Subscription.builder("/queue/orders", e -> { }).concurrency(1).prefetch(9).build())
                        .start()) {
                    peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                    int performatives = peer.getPerformativeCount();
                    await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(3))
                            .until(() -> peer.getPerformativeCount() == performatives);
                    assertThat(consumer.health().healthy()).isTrue();
                    peer.expectDetach().respond();
                    peer.expectEnd().respond();
                    peer.expectClose().respond();
                }
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            }
        });
    }

    /**
     * A broker that never answers a drain (here: the pause's drain when the store goes down) must not leave the link
     * without credit for good: after the request timeout the runtime stops waiting, never drains on that broker again,
     * and grants credit as soon as the store answers; the next message is handled.
     */
    @Test
    void aDrainTheBrokerNeverAnswersDoesNotStrandTheLink() throws Exception {
        FaultInjectingStore store = new FaultInjectingStore(InMemoryIdempotencyStore.ofDefaults());
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            ScriptedPeer.expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(2);
            peer.start();
            try (AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(ScriptedPeer.settings(peer).requestTimeout(Duration.ofMillis(300)).build())
                    .store(store).observer(observer).failFastStart(true)
                    .storeRetryDelay(Duration.ofMillis(50), Duration.ofMillis(100))
                    .subscribe(Subscription.builder("orders", e -> { }).concurrency(1).prefetch(1).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                // the pause drains the link first (never answered), then the delivery is released
                peer.expectFlow().withDrain(true).withLinkCredit(1);
                peer.expectDisposition().withFirst(0).withSettled(true).withState().released();
                store.down(true);
                peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                        .withMessageFormat(0).withPayload(encoded("o-1", "x")).now();
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);

                peer.expectFlow().withLinkCredit(2);
                peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                        .withMessageFormat(0).withPayload(encoded("o-1", "x")).queue();
                peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
                peer.expectFlow().withLinkCredit(2); // its slot granted again
                store.down(false);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                // close: no drain on this broker any more
                peer.expectDetach().respond();
                peer.expectEnd().respond();
                peer.expectClose().respond();
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /** RabbitMQ has no AMQP transactions: a TRANSACTIONAL subscription is refused with a clear error. */
    @Test
    void aTransactionalSubscriptionIsRefusedClearlyOnABrokerWithoutTransactions() throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            peer.expectSASLAnonymousConnect();
            peer.expectOpen().respond().withProperty("product", "RabbitMQ").withProperty("version", "3.10.8");
            peer.expectClose().respond();
            peer.start();
            Throwable failure = catchThrowable(() -> ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .subscribe(Subscription.builder("/queue/orders", e -> { })
                            .acknowledgementMode(AcknowledgementMode.TRANSACTIONAL).build())
                    .start());
            assertThat(failure).isInstanceOf(AcemqException.class)
                    .hasMessageContaining("RabbitMQ 3.10.8 does not support AMQP transactions");
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * A broker that does not say who it is gets {@code modified} (the spec's outcome for a failed attempt). When it
     * ends the session for it (RabbitMQ's "Unrecognised state"), the runtime remembers that (logged once), rebuilds the
     * session and the link, and settles the redelivered message's next failure with {@code released}: it never loops on
     * the dead session and never sends {@code modified} again.
     */
    @Test
    void aModifiedThatEndsTheSessionIsNeverSentAgainAndTheSessionAndLinkAreRebuilt() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            ScriptedPeer.expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(10);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("t-1", "x")).queue();
            peer.expectDisposition().withFirst(0).withSettled(true).withState().modified(true);
            peer.remoteEnd().withErrorCondition("amqp:invalid-field",
                    "Unrecognised state: {'v1_0.modified',true,undefined,undefined}").queue();
            peer.expectEnd();
            // a new session, a new link, the full budget again; the broker redelivers the message
            peer.expectBegin().respond();
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(10);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("t-1", "x")).queue();
            peer.expectDisposition().withFirst(0).withSettled(true).withState().released();
            peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("t-1", "x")).queue();
            peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
            peer.expectFlow().withLinkCredit(10).withDeliveryCount(2); // two slots free: a batch
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> {
                        if (attempts.incrementAndGet() < 3) {
                            throw new IllegalStateException("try again");
                        }
                    }).retryBackoff(RetryBackoff.none()).concurrency(1).prefetch(9).build())
                    .start()) {
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                assertThat(attempts).hasValue(3);
                assertThat(consumer.health().healthy()).isTrue();
                ScriptedPeer.expectGracefulClose(peer, 2, 10);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /** On RabbitMQ 3 a /queue/NAME address is declared non-durable: one WARN at attach names the durable form. */
    @Test
    void aRiskyRabbitMq3AddressIsWarnedAboutOnceWithTheDurableAlternative() throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer(); StandardErrorTee log = new StandardErrorTee()) {
            expectRabbitMq(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(10);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .subscribe(Subscription.builder("/queue/orders", e -> { }).concurrency(1).prefetch(9).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(log.lines("consumes from '/queue/orders'")).singleElement().satisfies(line ->
                        assertThat(line).contains("WARN").contains("non-durable").contains("'/amq/queue/orders'"));
                peer.expectDetach().respond(); // RabbitMQ 3: closed without a drain
                peer.expectEnd().respond();
                peer.expectClose().respond();
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }
}

package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Accepted;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Released;
import org.apache.qpid.protonj2.test.driver.codec.transport.SenderSettleMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The protonj2 reconnect trap (client notes §5, pitfall 4): after a reconnect, accepting a delivery received on
 * the old connection is a silent no-op that still reports the delivery settled/Accepted, while the broker
 * redelivers it. Two scripted peers: the first drops the connection while a handler runs, the client fails over to
 * the second.
 */
@Timeout(30)
class WireReconnectTest {

    private static final int BUDGET = 20;

    /**
     * Proves the connection-generation guard: the delivery whose handler was running when the connection dropped
     * is not settled on either peer and is reported abandoned, not ACCEPTED, although its work is confirmed in the
     * store; the second peer's redelivery of the same message-id is accepted as DUPLICATE without running the
     * handler again. Also proves credit on the re-attached link is consistent without any drain: protonj2 re-grants
     * the remaining 19, which the runtime's new link object inherits (budget 20 minus the one handler still running),
     * so no further flow goes out; the same link name and the source's default outcome are kept.
     * AT_MOST_ONCE runs the same script with its settled attach: the transfer arrives UNSETTLED anyway (the
     * misbehaving broker that ignores the default outcome), so the runtime would accept it after handling; across the reconnect it
     * must not report that accept (protonj2 drops it silently) but abandon it, and accept the redelivery.
     */
    @ParameterizedTest
    @EnumSource(value = AcknowledgementMode.class, names = {"AT_LEAST_ONCE", "AT_MOST_ONCE"})
    void deliveryInHandlerDuringReconnectIsAbandonedAndItsRedeliveryIsAbsorbed(AcknowledgementMode mode)
            throws Exception {
        boolean atMostOnce = mode == AcknowledgementMode.AT_MOST_ONCE;
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        CountDownLatch handlerEntered = new CountDownLatch(1);
        CountDownLatch releaseHandler = new CountDownLatch(1);
        try (ProtonTestServer first = new ProtonTestServer(); ProtonTestServer second = new ProtonTestServer()) {
            expectConnectAndBegin(first);
            first.expectAttach().ofReceiver().withName("orders-link").respond();
            first.expectFlow().withLinkCredit(BUDGET);
            first.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).queue();
            first.start();

            expectConnectAndBegin(second);
            second.expectAttach().ofReceiver().withName("orders-link")
                    .withSndSettleMode(atMostOnce ? SenderSettleMode.SETTLED : SenderSettleMode.UNSETTLED)
                    .withSource().withAddress("orders")
                    .withDefaultOutcome(atMostOnce ? new Accepted() : new Released()).and().respond();
            // protonj2 re-grants what the old link had left: 20 - 1 delivered. The runtime adds nothing (19 + 1 held).
            second.expectFlow().withLinkCredit(BUDGET - 1).withDrain(false);
            second.start();

            URI failover = second.getServerURI();
            ConnectionSettings settings = ScriptedPeer.settings(first)
                    .reconnect(true)
                    .failover(failover.getHost(), failover.getPort())
                    .reconnectDelay(Duration.ofMillis(10), Duration.ofMillis(100))
                    .build();
            try (AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(settings)
                    .store(store)
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> {
                        handled.add(e.body(String.class));
                        handlerEntered.countDown();
                        releaseHandler.await();
                    }).acknowledgementMode(mode).linkName("orders-link").concurrency(1).prefetch(BUDGET - 1)
                            .build())
                    .start()) {
                assertThat(handlerEntered.await(5, TimeUnit.SECONDS)).isTrue();
                first.waitForScriptToComplete(5, TimeUnit.SECONDS);

                first.dropConnection();
                second.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.interruptions() == 1);

                releaseHandler.countDown();
                await().until(() -> observer.abandonments() == 1);
                assertThat(store.isConfirmed("orders|s:ord-1")).isTrue();
                assertThat(observer.settlements()).isEmpty();

                // The broker redelivers it on the new connection: absorbed, handler not run again.
                second.expectDisposition().withFirst(0).withSettled(true).withState().accepted();
                second.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                        .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).now();
                second.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 1);
                assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactly(
                        tuple("orders", Outcome.ACCEPTED, SettleReason.DUPLICATE));
                assertThat(handled).containsExactly("one");
                assertThat(observer.abandonments()).isEqualTo(1);
                assertThat(observer.scopes()).as("the abandoned delivery's scope did not close as ACCEPTED")
                        .extracting(RecordingObserver.Scope::outcome).containsExactly((Outcome) null);

                // Strict: nothing else (no late disposition for the old delivery, no grant) before the close's drain.
                ScriptedPeer.expectGracefulClose(second, 1, BUDGET - 2);
            }
            second.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves the transactional subscription does not carry its transaction across a reconnect (AMQ-5456 meets the
     * reconnect trap): protonj2 keeps the dead transaction "declared" and would send the next delivery's outcome
     * as TransactionalState(stale txn-id) on the new connection. The delivery enlisted in the dead transaction is
     * reported abandoned, never ACCEPTED; the first delivery on the new connection makes the runtime attach a new
     * coordinator and declare a new transaction, and its outcome travels in that one. (Seed 001.)
     */
    @Test
    void transactionDoesNotSurviveAReconnectAndTheNextOutcomeGoesInANewTransaction() throws Exception {
        byte[] txn1 = {1, 1, 1, 1};
        byte[] txn2 = {2, 2, 2, 2};
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (ProtonTestServer first = new ProtonTestServer(); ProtonTestServer second = new ProtonTestServer()) {
            expectConnectAndBegin(first);
            first.expectAttach().ofReceiver().withName("orders-link").respond();
            first.expectCoordinatorAttach().respond();
            first.remoteFlow().withLinkCredit(100).queue();
            first.expectDeclare().accept(txn1);
            first.expectFlow().withHandle(0).withLinkCredit(BUDGET);
            first.remoteTransfer().withHandle(0).withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("ord-1", "one")).queue();
            first.expectDisposition().withSettled(true).withState().transactional().withTxnId(txn1).withAccepted();
            first.start();

            expectConnectAndBegin(second);
            second.expectAttach().ofReceiver().withName("orders-link").respond();
            // protonj2's re-grant; ord-1 still occupies its slot (enlisted, not committed): 19 + 1 = the budget.
            second.expectFlow().withLinkCredit(BUDGET - 1).withDrain(false);
            second.start();

            URI failover = second.getServerURI();
            ConnectionSettings settings = ScriptedPeer.settings(first)
                    .reconnect(true)
                    .failover(failover.getHost(), failover.getPort())
                    .reconnectDelay(Duration.ofMillis(10), Duration.ofMillis(100))
                    .build();
            try (AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(settings)
                    .store(store)
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .acknowledgementMode(AcknowledgementMode.TRANSACTIONAL)
                            .transactionBatch(10, Duration.ofMinutes(1))
                            .linkName("orders-link").concurrency(1).prefetch(BUDGET - 1).build())
                    .start()) {
                first.waitForScriptToComplete(5, TimeUnit.SECONDS);
                first.dropConnection();
                second.waitForScriptToComplete(5, TimeUnit.SECONDS);

                // A new delivery on the new connection: a new coordinator, a new transaction, its outcome in it.
                second.expectCoordinatorAttach().respond();
                second.remoteFlow().withLinkCredit(100).queue();
                second.expectDeclare().accept(txn2);
                second.expectDisposition().withSettled(true).withState().transactional().withTxnId(txn2)
                        .withAccepted();
                second.remoteTransfer().withHandle(0).withDeliveryId(0).withDeliveryTag(new byte[] {0})
                        .withMore(false).withMessageFormat(0).withPayload(encoded("ord-2", "two")).now();
                second.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.abandonments() == 1);
                assertThat(observer.settlements()).isEmpty();
                assertThat(handled).containsExactly("one", "two");
                assertThat(store.isConfirmed("orders|s:ord-1")).isTrue();

                // Close: drain, commit of txn2 (ord-2), then ord-2 is reported.
                second.expectFlow().withHandle(0).withDrain(true).withLinkCredit(BUDGET - 2)
                        .withDeliveryCount(1).respond().withDrain(true).withLinkCredit(0)
                        .withDeliveryCount(BUDGET - 1);
                second.expectDischarge().withFail(false).withTxnId(txn2).accept();
                second.expectDetach().respond();
                second.expectEnd().respond();
                second.expectClose().respond();
            }
            second.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactly(
                    tuple("orders", Outcome.ACCEPTED, SettleReason.PROCESSED));
            assertThat(observer.abandonments()).isEqualTo(1);
        }
    }
}

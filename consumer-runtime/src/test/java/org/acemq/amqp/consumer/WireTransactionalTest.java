package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * TRANSACTIONAL acknowledgement on the wire (AMQ-5456: an outcome given inside a transaction is not final
 * until the discharge succeeds). Every disposition must travel as {@code TransactionalState(txn-id, outcome)}, and
 * nothing may be reported settled before the discharge is answered.
 *
 * <p>Wire layout: the receiver is attached first (handle 0), then the coordinator (handle 1); the client's
 * outgoing delivery ids on the session are used by the coordinator only (declare 0, discharge 1, declare 2, ...).
 * Budget 20 with threshold 5, so no credit top-up happens for the few deliveries used here.
 */
@Timeout(30)
class WireTransactionalTest {

    private static final int BUDGET = 20;
    private static final byte[] TXN1 = {1, 1, 1, 1};
    private static final byte[] TXN2 = {2, 2, 2, 2};
    private static final byte[] TXN3 = {3, 3, 3, 3};

    private static Subscription transactional(MessageHandler handler, int batchSize, Duration batchTime) {
        return Subscription.builder("orders", handler)
                .acknowledgementMode(AcknowledgementMode.TRANSACTIONAL)
                .concurrency(1)
                .prefetch(BUDGET - 1)
                .transactionBatch(batchSize, batchTime)
                .build();
    }

    /** Connect, receiver attach, coordinator attach with plenty of credit, first declare, receiver credit. */
    private static void expectStartWithTransaction(ProtonTestServer peer, byte[] txnId) {
        expectConnectAndBegin(peer);
        peer.expectAttach().ofReceiver().withSenderSettleModeUnsettled().withReceiverSettlesFirst().respond();
        peer.expectCoordinatorAttach().respond();
        peer.remoteFlow().withLinkCredit(100).queue();
        peer.expectDeclare().accept(txnId);
        peer.expectFlow().withHandle(0).withLinkCredit(BUDGET);
    }

    private static void transfer(ProtonTestServer peer, int id, Object messageId, String body, boolean now) {
        var transfer = peer.remoteTransfer().withHandle(0).withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id})
                .withMore(false).withMessageFormat(0).withPayload(encoded(messageId, body));
        if (now) {
            transfer.now();
        } else {
            transfer.queue();
        }
    }

    private static void expectTransactionalAccept(ProtonTestServer peer, byte[] txnId) {
        peer.expectDisposition().withSettled(true).withState().transactional().withTxnId(txnId).withAccepted();
    }

    /** Graceful close of a transactional subscription: drain, discharge of the (empty) open transaction, detach... */
    private static void expectTransactionalClose(ProtonTestServer peer, long deliveryCount, int credit, byte[] txnId) {
        peer.expectFlow().withHandle(0).withDrain(true).withLinkCredit(credit).withDeliveryCount(deliveryCount)
                .respond().withDrain(true).withLinkCredit(0).withDeliveryCount(deliveryCount + credit);
        peer.expectDischarge().withFail(false).withTxnId(txnId).accept();
        peer.expectDetach().respond();
        peer.expectEnd().respond();
        peer.expectClose().respond();
    }

    /** The peer's answer to the client's discharge transfer: accepted (commit done). */
    private static void answerDischarge(ProtonTestServer peer, long dischargeDeliveryId) {
        peer.remoteDisposition().withRole(true).withFirst(dischargeDeliveryId).withSettled(true)
                .withState().accepted().now();
    }

    /**
     * Proves (AMQ-5456) that accepts travel as TransactionalState(txn, Accepted), that a batch of N=2 deliveries is
     * discharged once, that NOTHING is reported to the observer while the discharge is unanswered (the peer holds
     * its answer until the test has checked), that the batch is reported ACCEPTED/PROCESSED only after the
     * discharge is accepted, and that the next transaction is declared right after. (Seed 001.)
     */
    @Test
    void batchOfTwoIsDischargedOnceAndReportedOnlyAfterTheDischargeIsAnswered() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        AtomicLong dischargeId = new AtomicLong(-1);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "one", false);
            transfer(peer, 1, "ord-2", "two", false);
            expectTransactionalAccept(peer, TXN1);
            expectTransactionalAccept(peer, TXN1);
            // Strict: one discharge for both; no answer yet.
            peer.expectDischarge().withFail(false).withTxnId(TXN1)
                    .withCapture(t -> dischargeId.set(t.getDeliveryId().longValue()));
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(transactional(e -> handled.add(e.body(String.class)), 2, Duration.ofMinutes(1)))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(handled).containsExactly("one", "two");
                assertThat(store.isConfirmed("orders|s:ord-1")).isTrue();
                assertThat(store.isConfirmed("orders|s:ord-2")).isTrue();
                // The discharge is on the wire and unanswered: the outcome is not final, nothing is reported.
                await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2))
                        .until(() -> observer.settlements().isEmpty() && observer.abandonments() == 0);

                peer.expectDeclare().accept(TXN2);
                answerDischarge(peer, dischargeId.get());
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
                assertThat(observer.abandonments()).isEqualTo(0);
                expectTransactionalClose(peer, 2, BUDGET - 2, TXN2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves a failing handler's outcome is TransactionalState(txn, Modified(delivery-failed=true)) in the same
     * transaction as the successful one, and both are reported (PROCESSED, FAILED) only after the commit.
     * (Seed 001.)
     */
    @Test
    void failedHandlerGoesOutAsTransactionalModifiedInTheSameBatch() throws Exception {
        RecordingObserver observer = new RecordingObserver();
        AtomicLong dischargeId = new AtomicLong(-1);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "ok", false);
            transfer(peer, 1, "ord-2", "fail", false);
            expectTransactionalAccept(peer, TXN1);
            peer.expectDisposition().withSettled(true).withState().transactional().withTxnId(TXN1)
                    .withModified(true);
            peer.expectDischarge().withFail(false).withTxnId(TXN1)
                    .withCapture(t -> dischargeId.set(t.getDeliveryId().longValue()));
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(transactional(e -> {
                        if ("fail".equals(e.body(String.class))) {
                            throw new IllegalStateException("transient");
                        }
                    }, 2, Duration.ofMinutes(1)))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2))
                        .until(() -> observer.settlements().isEmpty());

                peer.expectDeclare().accept(TXN2);
                answerDischarge(peer, dischargeId.get());
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
                assertThat(observer.count(Outcome.MODIFIED, SettleReason.FAILED)).isEqualTo(1);
                expectTransactionalClose(peer, 2, BUDGET - 2, TXN2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves time-based batching: with batch size 10, a single delivery is discharged once the batch time (400 ms)
     * has passed since it was enlisted, not before and not never; then the next transaction is declared and the
     * next delivery is enlisted in it. (Seed 001.)
     */
    @Test
    void batchTimeDischargesASmallerBatchAndANewTransactionFollows() throws Exception {
        RecordingObserver observer = new RecordingObserver();
        AtomicLong dispositionAt = new AtomicLong();
        AtomicLong dischargeAt = new AtomicLong();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "one", false);
            peer.expectDisposition().withSettled(true).withCapture(d -> dispositionAt.set(System.nanoTime()))
                    .withState().transactional().withTxnId(TXN1).withAccepted();
            peer.expectDischarge().withFail(false).withTxnId(TXN1)
                    .withCapture(t -> dischargeAt.set(System.nanoTime())).accept();
            peer.expectDeclare().accept(TXN2);
            transfer(peer, 1, "ord-2", "two", false);
            expectTransactionalAccept(peer, TXN2);
            peer.expectDischarge().withFail(false).withTxnId(TXN2).accept();
            peer.expectDeclare().accept(TXN3);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(transactional(e -> { }, 10, Duration.ofMillis(400)))
                    .start()) {
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
                assertThat(TimeUnit.NANOSECONDS.toMillis(dischargeAt.get() - dispositionAt.get()))
                        .isGreaterThanOrEqualTo(300);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
                expectTransactionalClose(peer, 2, BUDGET - 2, TXN3);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves a failed commit is not an acceptance: the peer rejects the discharge (protonj2 throws
     * ClientTransactionRolledBackException), both deliveries are reported abandoned and never ACCEPTED, a new
     * transaction is declared, and the broker's redeliveries of the same message-ids are accepted (in the new
     * transaction) as DUPLICATE without running the handler again. (Seed 001.)
     */
    @Test
    void rejectedDischargeAbandonsTheBatchAndRedeliveriesAreAcceptedAsDuplicates() throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "one", false);
            transfer(peer, 1, "ord-2", "two", false);
            expectTransactionalAccept(peer, TXN1);
            expectTransactionalAccept(peer, TXN1);
            peer.expectDischarge().withFail(false).withTxnId(TXN1)
                    .reject("amqp:transaction:rollback", "commit failed on the broker");
            peer.expectDeclare().accept(TXN2);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(transactional(e -> handled.add(e.body(String.class)), 2, Duration.ofMinutes(1)))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.abandonments() == 2);
                assertThat(observer.settlements()).isEmpty();
                assertThat(store.isConfirmed("orders|s:ord-1")).isTrue();
                assertThat(store.isConfirmed("orders|s:ord-2")).isTrue();

                // The broker rolled back: it redelivers both.
                expectTransactionalAccept(peer, TXN2);
                expectTransactionalAccept(peer, TXN2);
                peer.expectDischarge().withFail(false).withTxnId(TXN2).accept();
                peer.expectDeclare().accept(TXN3);
                transfer(peer, 2, "ord-1", "one", true);
                transfer(peer, 3, "ord-2", "two", true);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 2);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(2);
                assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isZero();
                assertThat(handled).containsExactly("one", "two");
                assertThat(observer.abandonments()).isEqualTo(2);
                expectTransactionalClose(peer, 4, BUDGET - 4, TXN3);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Proves a delivery that arrives during the close's drain is released INSIDE the open transaction
     * (TransactionalState(txn, Released)) and, like every transactional outcome, reported only after the discharge
     * is answered (AMQ-5456); before, it was reported RELEASED at once, ahead of the commit. (Seed 001.)
     */
    @Test
    void deliveryArrivingDuringTheCloseDrainIsReleasedInTheTransactionAndReportedAfterTheDischarge()
            throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        AtomicLong dischargeId = new AtomicLong(-1);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "one", false);
            expectTransactionalAccept(peer, TXN1);
            peer.start();

            AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(transactional(e -> handled.add(e.body(String.class)), 10, Duration.ofMinutes(1)))
                    .start();
            CompletableFuture<Void> closing = null;
            try {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(handled).containsExactly("one");

                // The close's drain: the broker sends one more message before it answers the drain.
                peer.expectFlow().withHandle(0).withDrain(true).withLinkCredit(BUDGET - 1).withDeliveryCount(1);
                transfer(peer, 1, "ord-2", "two", false);
                peer.remoteFlow().withHandle(0).withDrain(true).withLinkCredit(0).withDeliveryCount(BUDGET).queue();
                peer.expectDisposition().withSettled(true).withState().transactional().withTxnId(TXN1)
                        .withReleased();
                peer.expectDischarge().withFail(false).withTxnId(TXN1)
                        .withCapture(t -> dischargeId.set(t.getDeliveryId().longValue()));
                closing = CompletableFuture.runAsync(consumer::close);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2))
                        .until(() -> observer.settlements().isEmpty());

                peer.expectDetach().respond();
                peer.expectEnd().respond();
                peer.expectClose().respond();
                answerDischarge(peer, dischargeId.get());
                closing.get(10, TimeUnit.SECONDS);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            } finally {
                if (closing == null) {
                    consumer.close();
                }
            }
            assertThat(handled).containsExactly("one");
            assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactlyInAnyOrder(
                    tuple("orders", Outcome.ACCEPTED, SettleReason.PROCESSED),
                    tuple("orders", Outcome.RELEASED, SettleReason.SHUTDOWN));
        }
    }

    /**
     * A handler's send goes out in the transaction that accepts its message: the transfer carries the transaction's
     * id, the accept follows in the same transaction, and the message's claim is confirmed only once the discharge
     * was accepted (a rollback before that would make the broker redeliver it, and it must then run again).
     */
    @Test
    void aSendGoesOutInTheTransactionAndTheClaimIsConfirmedOnlyAfterTheCommit() throws Exception {
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        AtomicLong dischargeId = new AtomicLong(-1);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "one", false);
            peer.expectAttach().ofSender().withTarget().withAddress("events").and().respond();
            peer.remoteFlow().withHandle(2).withLinkCredit(10).queue();
            peer.expectTransfer().withHandle(2).withNonNullPayload().withState().transactional().withTxnId(TXN1)
                    .and().respond().withSettled(true).withState().transactional().withTxnId(TXN1).withAccepted();
            expectTransactionalAccept(peer, TXN1);
            peer.expectDischarge().withFail(false).withTxnId(TXN1)
                    .withCapture(t -> dischargeId.set(t.getDeliveryId().longValue()));
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(transactional(e -> e.send("events", OutgoingMessage.of("accepted")), 1,
                            Duration.ofMinutes(1)))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(store.isConfirmed("orders|s:ord-1")).as("not before the commit").isFalse();

                peer.expectDeclare().accept(TXN2);
                answerDischarge(peer, dischargeId.get());
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> store.isConfirmed("orders|s:ord-1"));
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                assertThat(observer.sends()).as("the send, reported as accepted into the transaction")
                        .extracting(RecordingObserver.Sent::path, RecordingObserver.Sent::result)
                        .containsExactly(tuple(SendPath.TRANSACTION, SendResult.ACCEPTED));
                expectTransactionalClose(peer, 1, BUDGET - 1, TXN2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * A send the broker rejects inside the transaction: the message is not accepted, the transaction is rolled back
     * (its send must not commit), and the message's claim is released, not confirmed, so its redelivery runs again.
     */
    @Test
    void aSendTheBrokerRejectsRollsTheTransactionBackAndReleasesTheClaim() throws Exception {
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStartWithTransaction(peer, TXN1);
            transfer(peer, 0, "ord-1", "one", false);
            peer.expectAttach().ofSender().withTarget().withAddress("events").and().respond();
            peer.remoteFlow().withHandle(2).withLinkCredit(10).queue();
            peer.expectTransfer().withHandle(2).withNonNullPayload().withState().transactional().withTxnId(TXN1)
                    .and().respond().withSettled(true).withState().transactional().withTxnId(TXN1)
                    .withRejected("amqp:not-allowed", "test: refused");
            peer.expectDischarge().withFail(true).withTxnId(TXN1).accept();
            peer.expectDeclare().accept(TXN2);
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(transactional(e -> e.send("events", OutgoingMessage.of("accepted")), 1,
                            Duration.ofMillis(50)))
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.abandonments() == 1);
                assertThat(store.isConfirmed("orders|s:ord-1")).as("rolled back: not confirmed").isFalse();
                assertThat(store.acquire("orders|s:ord-1").claimed()).as("its claim was released").isTrue();
                assertThat(observer.settlements()).isEmpty();
                assertThat(observer.sends()).as("the send, reported as refused")
                        .extracting(RecordingObserver.Sent::path, RecordingObserver.Sent::result)
                        .containsExactly(tuple(SendPath.TRANSACTION, SendResult.REFUSED));
                expectTransactionalClose(peer, 1, BUDGET - 1, TXN2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }
}

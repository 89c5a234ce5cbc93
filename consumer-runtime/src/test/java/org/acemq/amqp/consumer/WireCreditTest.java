package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Modified;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Rejected;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.UnsignedLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Credit bounds and the outcome of every fate of a delivery, as seen on the wire.
 */
@Timeout(60)
class WireCreditTest {

    /**
     * Concurrency 2 + prefetch 6 = W 8, grants in batches of at least 8/4 = 2. With every handler blocked, the peer
     * gets exactly 8 credits and no more (the runtime holds 8: 2 running, 6 waiting). Completing one delivery frees
     * exactly one slot. A single free slot is below the batch, and while received deliveries still wait for a handler
     * nothing is granted for it (no flow per delivery); the second completion makes a batch of 2 (flow link-credit 2).
     * The third frees one slot while 2 credits are outstanding (nothing sent), the fourth makes the next batch of 2
     * (flow link-credit 2 + 2 = 4). No flow ever grants more than W minus what is held.
     */
    @Test
    void creditNeverExceedsConcurrencyPlusPrefetchAndEachCompletionFreesOneSlot() throws Exception {
        Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
        List<String> started = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 8; i++) {
            gates.put("m-" + i, new CountDownLatch(1));
        }
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(8).withDeliveryCount(0);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 100, 1, 1);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .subscribe(Subscription.builder("orders", e -> {
                        String body = e.body(String.class);
                        started.add(body);
                        gates.get(body).await();
                    }).concurrency(2).prefetch(6).build())
                    .start()) {
                ScriptedPeer.awaitPerformatives(peer, 4); // open, begin, attach, flow
                for (int i = 0; i < 8; i++) {
                    WireLog.transfer(peer, 0, 0, i, encoded("m-" + i, "m-" + i));
                }
                await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 8 && started.size() == 2);
                assertThat(consumer.health().subscriptions().get(0).credit()).isZero();
                assertThat(wire.flows).as("no credit while W deliveries are held").isEmpty();

                gates.get(started.get(0)).countDown();
                await().until(() -> wire.dispositions.size() == 1 && started.size() == 3);
                gates.get(started.get(1)).countDown();
                await().until(() -> wire.grants(0).size() == 1);
                assertThat(wire.grants(0).get(0).credit()).as("two freed slots in one grant, none for the first alone")
                        .isEqualTo(2);
                assertThat(wire.grants(0).get(0).deliveryCount()).isEqualTo(8);
                assertThat(wire.dispositions).hasSize(2);

                await().until(() -> started.size() == 4);
                gates.get(started.get(2)).countDown();
                await().until(() -> wire.dispositions.size() == 3 && started.size() == 5);
                gates.get(started.get(3)).countDown();
                await().until(() -> wire.grants(0).size() == 2);
                assertThat(wire.grants(0).get(1).credit()).as("2 outstanding + a batch of 2").isEqualTo(4);
                assertThat(wire.dispositions).hasSize(4);
                gates.values().forEach(CountDownLatch::countDown);
                await().until(() -> wire.dispositions.size() == 8);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
            assertThat(wire.grants(0)).allSatisfy(f -> assertThat(f.credit()).isLessThanOrEqualTo(8));
        }
    }

    /** A copy whose key another owner holds is released after inProgressDelay, never accepted or handled. */
    @Test
    void inProgressCopyIsReleasedAfterTheDelayAndNeverAccepted() throws Exception {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        Claim other = store.newPeer().acquire("orders|s:busy");
        assertThat(other.claimed()).isTrue();
        List<String> handled = new CopyOnWriteArrayList<>();
        long[] sent = new long[1];
        WireLog wire = run(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                        .inProgressDelay(Duration.ofMillis(400)), store, null,
                peer -> {
                    sent[0] = System.nanoTime();
                    WireLog.transfer(peer, 0, 0, 0, encoded("busy", "busy"));
                }, w -> w.outcome(0, 0) != null);
        assertThat(wire.dispositions(0, 0)).hasSize(1);
        assertThat(wire.outcome(0, 0)).isEqualTo("released");
        assertThat(wire.disposition(0, 0).settled()).isTrue();
        assertThat(TimeUnit.NANOSECONDS.toMillis(wire.disposition(0, 0).nanos() - sent[0])).isGreaterThanOrEqualTo(400);
        assertThat(handled).isEmpty();
        assertThat(store.isConfirmed("orders|s:busy")).isFalse();
    }

    /** A handler failure that is not permanent: modified(delivery-failed=true), claim released for the retry. */
    @Test
    void transientFailureIsModifiedDeliveryFailed() throws Exception {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        WireLog wire = run(Subscription.builder("orders", e -> {
            throw new IllegalStateException("try later");
        }), store, null, peer -> WireLog.transfer(peer, 0, 0, 0, encoded("t-1", "t")), w -> w.outcome(0, 0) != null);
        Object state = wire.disposition(0, 0).state();
        assertThat(state).isInstanceOf(Modified.class);
        assertThat(((Modified) state).getDeliveryFailed()).isTrue();
        assertThat(((Modified) state).getUndeliverableHere()).isNotEqualTo(Boolean.TRUE);
        assertThat(store.isConfirmed("orders|s:t-1")).isFalse();
        assertThat(store.attempts("orders|s:t-1")).isEqualTo(1);
        assertThat(store.newPeer().acquire("orders|s:t-1").claimed()).as("claim released").isTrue();
    }

    /** PermanentMessageException("x"): rejected with acemq:permanent-failure and the description as given. */
    @Test
    void permanentFailureIsRejectedWithConditionAndDescription() throws Exception {
        WireLog wire = run(Subscription.builder("orders", e -> {
            throw new PermanentMessageException("x");
        }), InMemoryIdempotencyStore.ofDefaults(), null,
                peer -> WireLog.transfer(peer, 0, 0, 0, encoded("p-1", "p")), w -> w.outcome(0, 0) != null);
        Rejected rejected = (Rejected) wire.disposition(0, 0).state();
        assertThat(rejected.getError().getCondition().toString()).isEqualTo("acemq:permanent-failure");
        assertThat(rejected.getError().getDescription()).isEqualTo("x");
    }

    /** A key already claimed maxAttempts times (earlier attempts never finished) is rejected without running. */
    @Test
    void attemptBeyondMaxAttemptsIsRejectedWithoutRunningTheHandler() throws Exception {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        InMemoryIdempotencyStore crashed = store.newPeer();
        for (int i = 0; i < 2; i++) {
            crashed.release(crashed.acquire("orders|s:poison"));
        }
        List<String> handled = new CopyOnWriteArrayList<>();
        WireLog wire = run(Subscription.builder("orders", e -> handled.add(e.body(String.class))).maxAttempts(2),
                store, null, peer -> WireLog.transfer(peer, 0, 0, 0, encoded("poison", "p")),
                w -> w.outcome(0, 0) != null);
        Rejected rejected = (Rejected) wire.disposition(0, 0).state();
        assertThat(rejected.getError().getCondition().toString()).isEqualTo("acemq:max-attempts-exceeded");
        assertThat(handled).isEmpty();
        assertThat(store.isConfirmed("orders|s:poison")).isFalse();
    }

    /** No message-id: rejected acemq:missing-message-id, nothing claimed, handler not run. */
    @Test
    void messageWithoutIdIsRejected() throws Exception {
        RecordingObserver observer = new RecordingObserver();
        List<String> handled = new CopyOnWriteArrayList<>();
        WireLog wire = run(Subscription.builder("orders", e -> handled.add(e.body(String.class))),
                InMemoryIdempotencyStore.ofDefaults(), observer,
                peer -> WireLog.transfer(peer, 0, 0, 0, encoded(null, "anonymous")), w -> w.outcome(0, 0) != null);
        Rejected rejected = (Rejected) wire.disposition(0, 0).state();
        assertThat(rejected.getError().getCondition().toString()).isEqualTo("acemq:missing-message-id");
        assertThat(handled).isEmpty();
        assertThat(observer.claims()).isEmpty();
    }

    /** With MissingIdPolicy.applicationProperty("orderId") the property is the key: a second copy is a duplicate. */
    @Test
    void applicationPropertyIsTheKeyWhenTheMessageHasNoId() throws Exception {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        List<String> handled = new CopyOnWriteArrayList<>();
        WireLog wire = run(Subscription.builder("orders", e -> handled.add(e.id()))
                        .missingIdPolicy(MissingIdPolicy.applicationProperty("orderId")), store, null,
                peer -> {
                    WireLog.transfer(peer, 0, 0, 0, withProperty("orderId", "o-7", "first"));
                    WireLog.transfer(peer, 0, 0, 1, withProperty("orderId", "o-7", "first"));
                },
                w -> w.outcome(0, 1) != null);
        assertThat(wire.outcome(0, 0)).isEqualTo("accepted");
        assertThat(wire.outcome(0, 1)).isEqualTo("accepted");
        assertThat(handled).hasSize(1);
        assertThat(store.isConfirmed(handled.get(0))).isTrue();
        assertThat(handled.get(0)).isEqualTo("orders|p:orderId=s:o-7");
    }

    /** Payload that is not an AMQP message: rejected amqp:decode-error before anything is claimed. */
    @Test
    void undecodableBodyIsRejectedWithDecodeErrorWithoutClaiming() throws Exception {
        RecordingObserver observer = new RecordingObserver();
        WireLog wire = run(Subscription.builder("orders", e -> { }), InMemoryIdempotencyStore.ofDefaults(), observer,
                peer -> WireLog.transfer(peer, 0, 0, 0, new byte[] {(byte) 0xde, (byte) 0xad, (byte) 0xbe, (byte) 0xef,
                        0x00, 0x53, 0x77, (byte) 0xa1, 0x7f}),
                w -> w.outcome(0, 0) != null);
        Rejected rejected = (Rejected) wire.disposition(0, 0).state();
        assertThat(rejected.getError().getCondition().toString()).isEqualTo("amqp:decode-error");
        assertThat(observer.claims()).isEmpty();
        assertThat(observer.count(Outcome.REJECTED, SettleReason.UNDECODABLE)).isEqualTo(1);
    }

    /** string "1", ulong 1, a UUID and binary 0x01 are four different ids: each is handled once. */
    @Test
    void idsOfDifferentAmqpTypesAreDifferentKeys() throws Exception {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        List<String> keys = new CopyOnWriteArrayList<>();
        UUID uuid = UUID.fromString("00000000-0000-0000-0000-000000000001");
        Object[] ids = {"1", UnsignedLong.valueOf(1), uuid, new Binary(new byte[] {1})};
        WireLog wire = run(Subscription.builder("orders", e -> keys.add(e.id())), store, null,
                peer -> {
                    for (int i = 0; i < ids.length; i++) {
                        WireLog.transfer(peer, 0, 0, i, encoded(ids[i], "body"));
                    }
                    for (int i = 0; i < ids.length; i++) {
                        WireLog.transfer(peer, 0, 0, ids.length + i, encoded(ids[i], "body"));
                    }
                },
                w -> w.dispositions.size() == 8);
        assertThat(keys).hasSize(4).doesNotHaveDuplicates();
        assertThat(keys).containsExactlyInAnyOrder("orders|s:1", "orders|n:1", "orders|u:" + uuid, "orders|b:01");
        for (int i = 0; i < 8; i++) {
            assertThat(wire.outcome(0, i)).isEqualTo("accepted");
        }
        keys.forEach(k -> assertThat(store.isConfirmed(k)).as(k).isTrue());
    }

    // ------------------------------------------------------------------ helpers

    /**
     * One subscription (concurrency 1, prefetch 9: W = 10) against a peer that accepts the attach and the first
     * flow strictly, then anything; {@code send} drives the peer, {@code done} says when to close.
     */
    private static WireLog run(Subscription.Builder subscription, InMemoryIdempotencyStore store,
                               RecordingObserver observer, Consumer<ProtonTestServer> send,
                               java.util.function.Predicate<WireLog> done) throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(10);
            WireLog wire = WireLog.acceptAnythingThenClose(peer, 100, 1, 1);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer == null ? ConsumerObserver.NOOP : observer)
                    .subscribe(subscription.concurrency(1).prefetch(9).build())
                    .start()) {
                await().until(() -> consumer.health().subscriptions().get(0).credit() == 10);
                ScriptedPeer.awaitPerformatives(peer, 4); // open, begin, attach, flow
                send.accept(peer);
                BooleanSupplier finished = () -> done.test(wire);
                await().atMost(Duration.ofSeconds(10)).until(finished::getAsBoolean);
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
            return wire;
        }
    }

    private static byte[] withProperty(String name, String value, String body) {
        try {
            Message<String> message = Message.create(body);
            message.property(name, value);
            ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
            byte[] bytes = new byte[buffer.getReadableBytes()];
            buffer.readBytes(bytes, 0, bytes.length);
            return bytes;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}

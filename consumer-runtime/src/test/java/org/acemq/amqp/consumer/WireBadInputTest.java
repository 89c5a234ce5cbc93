package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.types.Binary;
import org.hamcrest.Matchers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Bad input on the wire, one test each, with the outcome docs/bad-input.md documents: missing, over-long and binary
 * message-ids, and a payload that cannot be decoded. Nothing is lost: every delivery is settled with a definite
 * outcome, and the handler runs exactly once for every message it can run for.
 */
@Timeout(30)
class WireBadInputTest extends WireRunTest {

    @Test
    void aMessageWithoutAMessageIdIsRejectedAsMissingIdAndNothingIsClaimed() throws Exception {
        run(orders(), List.of(encoded(null, "no id")), peer -> peer.expectDisposition().withSettled(true)
                .withState().rejected("acemq:missing-message-id", Matchers.notNullValue()));
        assertThat(handled).isEmpty();
        assertThat(observer.count(Outcome.REJECTED, SettleReason.MISSING_ID)).isEqualTo(1);
        assertThat(observer.claims()).as("the store was never asked").isEmpty();
    }

    @Test
    void aMessageWithoutAMessageIdIsKeyedByTheConfiguredPropertyAndItsCopyIsADuplicate() throws Exception {
        run(orders().missingIdPolicy(MissingIdPolicy.applicationProperty("orderId")),
                List.of(withProperty(null, "orderId", "o-7"), withProperty(null, "orderId", "o-7")), peer -> {
                    peer.expectDisposition().withSettled(true).withState().accepted();
                    peer.expectDisposition().withSettled(true).withState().accepted();
                });
        assertThat(handled).hasSize(1);
        assertThat(handled.get(0).id()).isEqualTo("orders|p:orderId=s:o-7");
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
    }

    @Test
    void anOverLongMessageIdIsHashedToAFixedLengthKeyProcessedOnceAndItsDuplicateAbsorbed() throws Exception {
        String longId = "order-" + "x".repeat(600);
        run(orders(), List.of(encoded(longId, "first"), encoded(longId, "first")), peer -> {
            peer.expectDisposition().withSettled(true).withState().accepted();
            peer.expectDisposition().withSettled(true).withState().accepted();
        });
        assertThat(handled).hasSize(1);
        Envelope envelope = handled.get(0);
        assertThat(envelope.id()).matches("orders\\|h:[0-9a-f]{64}");
        assertThat(envelope.messageId()).as("the handler still sees the whole id").isEqualTo(longId);
        assertThat(store.isConfirmed(envelope.id())).isTrue();
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
    }

    @Test
    void aBinaryMessageIdIsKeyedAsHexAndNeverCollidesWithTheSameTextAsAString() throws Exception {
        byte[] bytes = {0x01, 0x02, (byte) 0xff};
        run(orders(), List.of(encoded(new Binary(bytes), "binary"), encoded("0102ff", "string")), peer -> {
            peer.expectDisposition().withSettled(true).withState().accepted();
            peer.expectDisposition().withSettled(true).withState().accepted();
        });
        assertThat(handled).extracting(Envelope::id).containsExactly("orders|b:0102ff", "orders|s:0102ff");
        assertThat((byte[]) handled.get(0).messageId()).containsExactly(bytes);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
    }

    @Test
    void aPayloadThatCannotBeDecodedIsRejectedAsDecodeErrorAndNothingIsClaimed() throws Exception {
        // an amqp-value section whose str8 says 16 bytes follow, and only one does
        byte[] garbage = {0x00, 0x53, 0x77, (byte) 0xA1, 0x10, 'a'};
        run(orders(), List.of(garbage, encoded("after", "fine")), peer -> {
            peer.expectDisposition().withSettled(true).withState()
                    .rejected("amqp:decode-error", Matchers.notNullValue());
            peer.expectDisposition().withSettled(true).withState().accepted();
        });
        assertThat(observer.count(Outcome.REJECTED, SettleReason.UNDECODABLE)).isEqualTo(1);
        assertThat(handled).as("the next message is unaffected").extracting(Envelope::id).containsExactly("orders|s:after");
        assertThat(observer.claims()).as("only the good message was claimed").hasSize(1);
    }

    @Test
    void aBodyOfTheWrongTypeIsRejectedAsDecodeErrorAndItsClaimReleased() throws Exception {
        run(Subscription.builder("orders", e -> e.body(java.util.Map.class)),
                List.of(encoded("typed", "a string, not a map")), peer -> peer.expectDisposition()
                        .withSettled(true).withState().rejected("amqp:decode-error", Matchers.notNullValue()));
        assertThat(observer.count(Outcome.REJECTED, SettleReason.PERMANENT)).isEqualTo(1);
        assertThat(store.isConfirmed("orders|s:typed")).isFalse();
        assertThat(store.attempts("orders|s:typed")).as("released, so it can be re-driven from the DLQ").isEqualTo(1);
        assertThat(store.newPeer().acquire("orders|s:typed").claimed()).isTrue();
    }

    /**
     * A message-id holding a NUL character (which PostgreSQL text cannot hold, and MessageIds.requireValid refuses) is
     * keyed {@code h:<sha-256>} before any store sees it, the same for every store: processed once, its copy absorbed.
     */
    @Test
    void aMessageIdWithANulCharacterIsHashedToAStorableKeyProcessedOnceAndItsDuplicateAbsorbed() throws Exception {
        String nul = "j-nul\u0000byte";
        run(orders(), List.of(encoded(nul, "first"), encoded(nul, "first")), peer -> {
            peer.expectDisposition().withSettled(true).withState().accepted();
            peer.expectDisposition().withSettled(true).withState().accepted();
        });
        assertThat(handled).hasSize(1);
        assertThat(handled.get(0).id()).matches("orders\\|h:[0-9a-f]{64}");
        assertThat(handled.get(0).messageId()).isEqualTo(nul);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
    }

    /**
     * A store that refuses one key (InvalidMessageIdException: the store works, this key it cannot take) gets that
     * message rejected once with acemq:invalid-message-id; nothing pauses, and the next message is handled as usual.
     */
    @Test
    void aKeyTheStoreRefusesIsRejectedOnceAsInvalidMessageIdAndNothingPauses() throws Exception {
        FaultInjectingStore refusing = new FaultInjectingStore(store);
        refusing.refuse("orders|s:refused");
        RecordingObserver seen = new RecordingObserver();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(101);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("refused", "x")).queue();
            peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("fine", "y")).queue();
            peer.expectDisposition().withFirst(0).withSettled(true).withState()
                    .rejected("acemq:invalid-message-id", Matchers.containsString("cannot hold this key"));
            peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, refusing).observer(seen)
                    .subscribe(orders().build()).start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> seen.settlements().size() == 2);
                assertThat(consumer.health().paused()).isFalse();
                assertThat(consumer.health().storeReachable()).isTrue();
                ScriptedPeer.expectGracefulClose(peer, 2, 99);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
        assertThat(seen.count(Outcome.REJECTED, SettleReason.INVALID_ID)).isEqualTo(1);
        assertThat(seen.pauses()).as("never paused").isEmpty();
        assertThat(handled).extracting(Envelope::id).containsExactly("orders|s:fine");
    }
}

package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.hamcrest.Matchers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What counts as a duplicate, on the wire (README "What counts as a duplicate"): a business key absorbs a publisher's
 * retry under a new message-id; a copy whose key is known with other content is a conflict, settled as a copy and
 * counted (default) or rejected, and a true duplicate never is one; a key function that fails rejects that message only.
 */
@Timeout(30)
class WireDuplicateMeaningTest extends WireRunTest {

    @Test
    void aPublisherRetryUnderANewMessageIdIsAbsorbedByABusinessKey() throws Exception {
        run(orders().key(KeySource.applicationProperty("orderId")),
                List.of(withProperty("attempt-1", "orderId", "o-7"), withProperty("attempt-2", "orderId", "o-7"),
                        withProperty("attempt-3", "orderId", "o-8")), peer -> {
                    for (int i = 0; i < 3; i++) {
                        peer.expectDisposition().withSettled(true).withState().accepted();
                    }
                });
        assertThat(handled).extracting(e -> e.id()).containsExactly("orders|p:orderId=s:o-7",
                "orders|p:orderId=s:o-8");
        assertThat(handled).extracting(e -> e.messageId()).containsExactly("attempt-1", "attempt-3");
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
    }

    @Test
    void aBusinessKeyMissingFromAMessageRejectsThatMessageOnly() throws Exception {
        run(orders().key(KeySource.applicationProperty("orderId")),
                List.of(encoded("no-order-id", "x"), withProperty("m-2", "orderId", "o-2")), peer -> {
                    peer.expectDisposition().withSettled(true).withState()
                            .rejected("acemq:missing-message-id", Matchers.notNullValue());
                    peer.expectDisposition().withSettled(true).withState().accepted();
                });
        assertThat(handled).extracting(e -> e.id()).containsExactly("orders|p:orderId=s:o-2");
        assertThat(observer.count(Outcome.REJECTED, SettleReason.MISSING_ID)).isEqualTo(1);
    }

    @Test
    void aKeyFunctionThatFailsRejectsThatMessageAndTheNextIsHandled() throws Exception {
        run(orders().key(KeySource.of("body.orderId", e -> {
            Object body = e.body();
            if (!(body instanceof Map<?, ?> map)) {
                throw new IllegalArgumentException("not a map");
            }
            return map.get("orderId");
        })), List.of(encoded("m-1", "not a map"), encodedMap("m-2", Map.of("orderId", "o-5")),
                encodedMap("m-3", Map.of("orderId", "o-5"))), peer -> {
                    peer.expectDisposition().withSettled(true).withState()
                            .rejected("acemq:missing-message-id", Matchers.notNullValue());
                    peer.expectDisposition().withSettled(true).withState().accepted();
                    peer.expectDisposition().withSettled(true).withState().accepted();
                });
        assertThat(handled).extracting(e -> e.id()).containsExactly("orders|k:s:o-5");
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
    }

    @Test
    void aCopyWithTheSameKeyAndOtherContentIsSettledAsACopyCountedAsAConflictAndNeverRun() throws Exception {
        run(orders(), List.of(encoded("order-1", "10 EUR"), encoded("order-1", "10 EUR"),
                encoded("order-1", "99 EUR")), peer -> {
                    for (int i = 0; i < 3; i++) {
                        peer.expectDisposition().withSettled(true).withState().accepted();
                    }
                });
        assertThat(handled).extracting(e -> e.body()).containsExactly("10 EUR");
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).as("a true duplicate").isEqualTo(1);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.CONFLICT)).isEqualTo(1);
        assertThat(observer.conflicts()).singleElement().satisfies(c -> {
            assertThat(c.key()).isEqualTo("orders|s:order-1");
            assertThat(c.recordedFingerprint()).matches("[0-9a-f]{32}").isNotEqualTo(c.fingerprint());
            assertThat(c.fingerprint()).matches("[0-9a-f]{32}");
        });
    }

    @Test
    void aSubscriptionThatRejectsConflictsDeadLettersTheDifferingCopyWithItsCondition() throws Exception {
        run(orders().fingerprint(Fingerprint.body().onConflict(Fingerprint.Action.REJECT)),
                List.of(encoded("order-1", "10 EUR"), encoded("order-1", "99 EUR"), encoded("order-1", "10 EUR")),
                peer -> {
                    peer.expectDisposition().withSettled(true).withState().accepted();
                    peer.expectDisposition().withSettled(true).withState()
                            .rejected("acemq:fingerprint-conflict", Matchers.notNullValue());
                    peer.expectDisposition().withSettled(true).withState().accepted();
                });
        assertThat(handled).extracting(e -> e.body()).containsExactly("10 EUR");
        assertThat(observer.count(Outcome.REJECTED, SettleReason.CONFLICT)).isEqualTo(1);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
    }

    @Test
    void withTheFingerprintOffACopyWithOtherContentIsADuplicate() throws Exception {
        run(orders().fingerprint(Fingerprint.off()),
                List.of(encoded("order-1", "10 EUR"), encoded("order-1", "99 EUR")), peer -> {
                    peer.expectDisposition().withSettled(true).withState().accepted();
                    peer.expectDisposition().withSettled(true).withState().accepted();
                });
        assertThat(handled).extracting(e -> e.body()).containsExactly("10 EUR");
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
        assertThat(observer.conflicts()).isEmpty();
    }

    @Test
    void namedPropertiesArePartOfTheFingerprint() throws Exception {
        run(orders().fingerprint(Fingerprint.body().withProperties("orderId")),
                List.of(withProperty("m-1", "orderId", "o-1"), withProperty("m-1", "orderId", "o-1"),
                        withProperty("m-1", "orderId", "o-2")), peer -> {
                    for (int i = 0; i < 3; i++) {
                        peer.expectDisposition().withSettled(true).withState().accepted();
                    }
                });
        assertThat(handled).hasSize(1);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(1);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.CONFLICT)).isEqualTo(1);
    }

    static byte[] encodedMap(String messageId, Map<String, Object> body) throws Exception {
        org.apache.qpid.protonj2.client.Message<Map<String, Object>> message =
                org.apache.qpid.protonj2.client.Message.create(body).messageId(messageId);
        org.apache.qpid.protonj2.buffer.ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
        byte[] bytes = new byte[buffer.getReadableBytes()];
        buffer.readBytes(bytes, 0, bytes.length);
        return bytes;
    }
}

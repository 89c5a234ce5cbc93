package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.acemq.amqp.api.MessageIds;
import org.junit.jupiter.api.Test;

/** Keys every store can take as they are: the raw ids no store could hold are hashed, the same way for every store. */
class MessageKeysTest {

    @Test
    void ordinaryIdsKeepTheirTypedForm() {
        assertThat(MessageKeys.fromMessageId("order-1")).isEqualTo("s:order-1");
        assertThat(MessageKeys.fromMessageId("ünïcode ✓ 😀")).isEqualTo("s:ünïcode ✓ 😀");
        assertThat(MessageKeys.fromMessageId("")).isNull();
    }

    @Test
    void decimalsAreKeyedByTheirBitsTheSameForEveryDecodeOfOneValue() {
        // protonj2's decimals have no toString of their own: a key from it would differ for every decode
        assertThat(MessageKeys.property("amount", new org.apache.qpid.protonj2.types.Decimal32(0x3000000a)))
                .isEqualTo("p:amount=x:Decimal32:3000000a")
                .isEqualTo(MessageKeys.property("amount", new org.apache.qpid.protonj2.types.Decimal32(0x3000000a)));
        assertThat(MessageKeys.typed(new org.apache.qpid.protonj2.types.Decimal64(5L)))
                .isEqualTo("x:Decimal64:0000000000000005");
        assertThat(MessageKeys.typed(new org.apache.qpid.protonj2.types.Decimal128(1L, 2L)))
                .isEqualTo("x:Decimal128:00000000000000010000000000000002");
    }

    @Test
    void anIdWithANulCharacterIsHashedToAKeyEveryStoreAccepts() {
        String key = MessageKeys.fromMessageId("j-nul\u0000byte");
        assertThat(key).matches("h:[0-9a-f]{64}");
        assertThat(MessageIds.requireValid(key)).isEqualTo(key);
        assertThat(MessageKeys.fromMessageId("j-nul\u0000byte")).as("deterministic").isEqualTo(key);
        assertThat(MessageKeys.fromMessageId("j-nul\u0000bytf")).isNotEqualTo(key);
    }

    @Test
    void unpairedSurrogatesAreHashedWithoutCollidingWithEachOtherOrWithWellFormedText() {
        String high = MessageKeys.fromMessageId("x\uD800y");
        String low = MessageKeys.fromMessageId("x\uDC00y");
        String questionMark = MessageKeys.fromMessageId("x?y");
        assertThat(high).matches("h:[0-9a-f]{64}");
        assertThat(low).matches("h:[0-9a-f]{64}").isNotEqualTo(high);
        assertThat(questionMark).as("plain UTF-8 would have turned both surrogates into '?'").isEqualTo("s:x?y");
        assertThat(MessageKeys.fromMessageId("x\uD83D\uDE00y")).as("a pair is well formed").isEqualTo("s:x😀y");
    }

    @Test
    void theGeneralisedUtf8FormIsUtf8ForWellFormedTextSoOverLongKeysHashAsBefore() {
        String text = "order-" + "é😀".repeat(300);
        assertThat(MessageKeys.generalisedUtf8(text)).isEqualTo(text.getBytes(StandardCharsets.UTF_8));
        assertThat(MessageKeys.generalisedUtf8("\uD800")).containsExactly(0xED, 0xA0, 0x80);
        assertThat(MessageKeys.fromMessageId("x".repeat(600))).matches("h:[0-9a-f]{64}");
    }

    @Test
    void propertyKeysWithANulAreHashedToo() {
        String key = MessageKeys.inScope("q", MessageKeys.property("orderId", "a\u0000b"));
        assertThat(key).matches("q\\|h:[0-9a-f]{64}");
        assertThat(MessageIds.requireValid(key)).isEqualTo(key);
        assertThat(MessageKeys.inScope("q", MessageKeys.property("orderId", "a\u0000c"))).isNotEqualTo(key);
    }

    @Test
    void idsInLogLinesAreEscapedAndShortened() {
        assertThat(LogSafe.id("j-nul\u0000byte\n")).isEqualTo("j-nul\\u0000byte\\u000a");
        assertThat(LogSafe.id("a\\b")).isEqualTo("a\\u005cb");
        assertThat(LogSafe.id("x\uD800y")).isEqualTo("x\\ud800y");
        assertThat(LogSafe.id("ok 😀")).isEqualTo("ok 😀");
        assertThat(LogSafe.id("y".repeat(200))).startsWith("y".repeat(LogSafe.MAX_ID)).endsWith("...(+120 chars)");
        assertThat(LogSafe.id(null)).isEqualTo("null");
    }

    @Test
    void storeErrorsThatQuoteAnIdAreEscapedBeforeTheyReachALogLineOrHealth() {
        RuntimeException e = new RuntimeException("cannot claim 's:j-nul\u0000byte': 22021\n");
        assertThat(Errors.describe(e)).isEqualTo("RuntimeException: cannot claim 's:j-nul\\u0000byte': 22021\\u000a");
        assertThat(Errors.describe(new RuntimeException("x".repeat(5000)))).hasSize(LogSafe.MAX_TEXT + 3);
    }
}

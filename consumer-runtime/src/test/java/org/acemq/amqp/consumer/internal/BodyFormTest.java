package org.acemq.amqp.consumer.internal;

import static org.acemq.amqp.consumer.internal.BodyFingerprintPropertyTest.buffer;
import static org.acemq.amqp.consumer.internal.BodyFingerprintPropertyTest.decode;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.AdvancedMessage;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.impl.ClientMessageSupport;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Decimal32;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.UnsignedInteger;
import org.apache.qpid.protonj2.types.messaging.AmqpValue;
import org.junit.jupiter.api.Test;

/**
 * What a body is hashed as: bodies of bytes or text exactly as before (pinned values), structured bodies as their
 * canonical form (one pinned example), encodings that cannot be read fall back to the decoded message without
 * failing. (Joining a payload of many pieces so that protonj2 can decode it: {@code engine.WholePayloadTest}.)
 */
class BodyFormTest {

    private static final Keys KEYS = new Keys(Subscription.builder("q", e -> { })
            .fingerprint(Fingerprint.body()).missingIdPolicy(MissingIdPolicy.bodyHash()).build(), null);

    private static byte[] encode(Message<?> message) throws Exception {
        ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
        byte[] bytes = new byte[buffer.getReadableBytes()];
        buffer.readBytes(bytes, 0, bytes.length);
        return bytes;
    }

    private static String fingerprint(byte[] encoded) throws Exception {
        return KEYS.fingerprint(decode(encoded), BodyForm.scan(buffer(encoded)));
    }

    private static String key(byte[] encoded) throws Exception {
        Message<?> m = decode(encoded);
        return KEYS.key(m, EnvelopeImpl.of(null, "q", m, 0), BodyForm.scan(buffer(encoded)));
    }

    @Test
    void bodiesOfBytesOrTextKeepTheFingerprintsAndBodyHashKeysTheyHadBefore() throws Exception {
        String hello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; // sha-256("hello")
        String bytes = "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81"; // sha-256(01 02 03)
        String none = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; // sha-256()
        byte[] string = encode(Message.create("hello"));
        byte[] data = encode(Message.create(new byte[] {1, 2, 3}));
        byte[] symbol = encode(Message.create((Object) Symbol.valueOf("hello")));
        byte[] binary = encode(Message.create((Object) new Binary(new byte[] {1, 2, 3})));
        byte[] empty = encode(Message.create().messageId(null));
        byte[] nullValue = encode(AdvancedMessage.create().addBodySection(new AmqpValue<>(null)));

        for (byte[] encoded : List.of(string, data, symbol, binary, empty, nullValue)) {
            assertThat(BodyForm.scan(buffer(encoded))).isSameAs(BodyForm.AS_DECODED);
        }
        assertThat(fingerprint(string)).isEqualTo(hello.substring(0, 32));
        assertThat(key(string)).isEqualTo("q|h:body:" + hello);
        assertThat(fingerprint(symbol)).as("a symbol as its text").isEqualTo(hello.substring(0, 32));
        assertThat(fingerprint(data)).isEqualTo(bytes.substring(0, 32));
        assertThat(key(data)).isEqualTo("q|h:body:" + bytes);
        assertThat(fingerprint(binary)).as("an amqp-value binary as its bytes").isEqualTo(bytes.substring(0, 32));
        assertThat(fingerprint(empty)).isEqualTo(none.substring(0, 32));
        assertThat(key(nullValue)).isEqualTo("q|h:body:" + none);
        // the same without the encoding (the fallback when protonj2's payload cannot be read)
        assertThat(KEYS.fingerprint(Message.create("hello"))).isEqualTo(hello.substring(0, 32));
        assertThat(KEYS.fingerprint(Message.create(new byte[] {1, 2, 3}))).isEqualTo(bytes.substring(0, 32));
    }

    @Test
    void aStructuredBodyIsHashedAsItsCanonicalFormWhateverItsEncoding() throws Exception {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("a", UnsignedInteger.valueOf(1)); // protonj2 writes a smalluint (52 01)
        byte[] encoded = encode(Message.create((Object) map));

        byte[] form = BodyForm.scan(buffer(encoded)).canonical();

        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        expected.writeBytes(BodyForm.TAG);
        expected.writeBytes(new byte[] {0x77, // amqp-value
            (byte) 0xd1, 0, 0, 0, 2, // a map of two items
            (byte) 0xb1, 0, 0, 0, 1, 'a', // the string "a"
            0x70, 0, 0, 0, 1}); // the uint 1, as uint
        assertThat(form).isEqualTo(expected.toByteArray());
        assertThat(fingerprint(encoded)).isEqualTo(HexFormat.of().formatHex(MessageKeys.newSha256()
                .digest(expected.toByteArray()), 0, 16));
    }

    @Test
    void anEncodingThatCannotBeReadFallsBackToTheDecodedMessage() throws Exception {
        byte[] value = {0x00, 0x53, 0x77}; // an amqp-value section header
        List<byte[]> unreadable = List.of(
                new byte[] {0x00, 0x53, 0x77, (byte) 0xA1, 0x10, 'a'}, // a str8 of 16 bytes, one there
                new byte[] {0x30}, // no section
                new byte[] {0x00, 0x53, 0x77, 0x31}, // no such constructor
                concat(value, new byte[] {(byte) 0xd0, 0, 0, 0, 4, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}),
                concat(value, new byte[] {(byte) 0xc0, 3, 2, 0x40}), // a list8 of two items, one there
                // an array of 2^31-1 uint0 (each 4 bytes in the form) in 10 bytes: past the form's bound
                concat(value, new byte[] {(byte) 0xf0, 0, 0, 0, 5, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff,
                    0x43}));
        for (byte[] bytes : unreadable) {
            assertThat(BodyForm.scan(buffer(bytes))).as("%s", HexFormat.of().formatHex(bytes)).isNull();
        }
        // a nesting deeper than the scan reads: the decoded message decides
        byte[] nested = {0x45}; // list0, in 500 lists of one item each
        for (int i = 0; i < 500; i++) {
            int size = nested.length + 4;
            nested = concat(new byte[] {(byte) 0xd0, (byte) (size >>> 24), (byte) (size >>> 16), (byte) (size >>> 8),
                (byte) size, 0, 0, 0, 1}, nested);
        }
        byte[] deep = concat(value, nested);
        assertThat(BodyForm.scan(buffer(deep))).isNull();
        // an array of 2^31-1 nulls in 10 bytes has a form (of a few bytes), read without a step per null
        assertThat(BodyForm.scan(buffer(concat(value, new byte[] {(byte) 0xf0, 0, 0, 0, 5, 0x7f, (byte) 0xff,
            (byte) 0xff, (byte) 0xff, 0x40}))).canonical()).hasSize(BodyForm.TAG.length + 1 + 1 + 4 + 1);
        assertThat(KEYS.fingerprint(decode(deep), null)).matches("[0-9a-f]{32}");

        Message<Object> list = Message.create((Object) List.of(1L, "x")); // an amqp-sequence
        assertThat(KEYS.fingerprint(list)).as("the fallback reads protonj2's own encoding")
                .isEqualTo(fingerprint(encode(list)));
    }

    @Test
    void theFormDoesNotMoveTheBuffersOffsets() throws Exception {
        ProtonBuffer buffer = buffer(encode(Message.create((Object) List.of(new Decimal32(7), "x"))));
        int read = buffer.getReadOffset();
        assertThat(BodyForm.scan(buffer).canonical()).isNotNull();
        assertThat(buffer.getReadOffset()).isEqualTo(read);
        assertThat(ClientMessageSupport.decodeMessage(buffer, a -> { }).body()).isEqualTo(
                List.of(new Decimal32(7), "x"));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}

package org.acemq.amqp.consumer.internal;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.messaging.AmqpValue;
import org.apache.qpid.protonj2.types.messaging.Data;
import org.apache.qpid.protonj2.types.messaging.Section;

/**
 * What a message's body is hashed as (its fingerprint, and its key under {@code MissingIdPolicy.bodyHash()}), read from
 * the message's AMQP encoding.
 *
 * <p>A body that is bytes or text is hashed as the decoded message gives it, as it always was ({@link #AS_DECODED}):
 * no body section, one {@code data} section, or one {@code amqp-value} section holding a string, a symbol, a binary or
 * null. Every other body (an {@code amqp-value} holding any other value, {@code amqp-sequence} sections, several body
 * sections) is hashed as its <em>canonical form</em>: a byte string that is a function of the values the body sections
 * hold, with their AMQP types, and of nothing else:
 * <ul>
 *   <li>a version tag ({@link #TAG}), then for each body section in order its descriptor code ({@code 0x75} data,
 *       {@code 0x76} amqp-sequence, {@code 0x77} amqp-value) and its value;</li>
 *   <li>each value is its AMQP constructor followed by its payload, where every type has one constructor and one
 *       payload layout, whichever encoding the sender chose: the widest fixed-width form for numbers
 *       ({@code smalluint}/{@code uint0} become {@code uint} with 4 bytes, {@code smalllong} becomes {@code long} with
 *       8, {@code true}/{@code false} become {@code boolean} with one byte 0 or 1), a 4-byte length then the bytes for
 *       binary, string and symbol, a 4-byte element count then the elements for list ({@code list0} too) and map (keys
 *       and values in the order encoded: AMQP maps are ordered), a 4-byte count, the element type's constructor once,
 *       then the elements' payloads for arrays, and {@code 0x00}, the descriptor, then the value for a described
 *       value;</li>
 *   <li>types other than these are kept as encoded (a fixed-width value by its constructor and bytes).</li>
 * </ul>
 * This class finds the body sections; {@link CanonicalValues} writes the values' form.
 * So two decodes of one message, a redelivery, and a re-publish of equal content by any client give the same form;
 * values that differ in any way, including only in their AMQP type (a {@code long} 5 and a {@code timestamp} 5, a
 * string and a symbol inside a map), give different forms. The form is never valid AMQP (the counts replace the sizes);
 * it is only hashed.
 *
 * <p>When the runtime cannot read protonj2's encoded message ({@link ProtonInternals#wholePayload} returns null), {@link #of(Message)}
 * computes the form from the decoded message re-encoded by protonj2: the same form, except that protonj2 decodes a
 * {@code timestamp} as a {@code long} and a {@code char} as a 16-bit Java char, so those come out as it re-encodes them.
 *
 * <p>Stateless; safe on any thread.
 */
final class BodyForm {

    /** The body is bytes or text: hash it as the decoded message gives it. */
    static final BodyForm AS_DECODED = new BodyForm(null);
    /** First bytes of every canonical form: a version tag (a NUL byte, {@code acemq-body}, version 1). */
    static final byte[] TAG = {0, 'a', 'c', 'e', 'm', 'q', '-', 'b', 'o', 'd', 'y', 1};

    private static final int DATA = 0x75;
    private static final int SEQUENCE = 0x76;
    private static final int VALUE = 0x77;

    private final byte[] canonical;

    private BodyForm(byte[] canonical) {
        this.canonical = canonical;
    }

    /** @return the canonical form, or null if the body is hashed {@linkplain #AS_DECODED as decoded} */
    byte[] canonical() {
        return canonical;
    }

    /**
     * Reads the form from an encoded message, without moving its offsets.
     *
     * @param message the encoded message, from its read offset to its write offset (one piece: see
     *     {@link ProtonInternals#wholePayload})
     * @return its body's form, or null if the bytes are not an AMQP message this can read (the caller then uses
     *     {@link #of(Message)}, once protonj2 has decoded it)
     */
    static BodyForm scan(ProtonBuffer message) {
        try {
            return new Scan(message).body();
        } catch (CanonicalValues.Malformed | IndexOutOfBoundsException e) {
            return null;
        }
    }

    /**
     * The form of a message built or decoded by protonj2: its body sections encoded by protonj2, then
     * {@linkplain #scan scanned}.
     *
     * @param message the message
     * @return its body's form
     */
    static BodyForm of(Message<?> message) throws ClientException {
        Collection<Section<?>> sections = message.toAdvancedMessage().bodySections();
        if (sections.isEmpty()) {
            return AS_DECODED;
        }
        if (sections.size() == 1) {
            Section<?> only = sections.iterator().next();
            Object value = only.getValue();
            if (only instanceof Data || only instanceof AmqpValue && (value == null || value instanceof String
                    || value instanceof Symbol || value instanceof Binary)) {
                return AS_DECODED;
            }
        }
        ProtonBuffer encoded = ProtonInternals.encodeSections(sections);
        BodyForm form = scan(encoded);
        if (form != null) {
            return form;
        }
        // nested deeper than the scan reads: the tag, a 0 (where a section code would be), protonj2's encoding
        byte[] bytes = new byte[TAG.length + 1 + encoded.getReadableBytes()];
        System.arraycopy(TAG, 0, bytes, 0, TAG.length);
        encoded.readBytes(bytes, TAG.length + 1, encoded.getReadableBytes());
        return new BodyForm(bytes);
    }

    @Override
    public String toString() {
        return canonical == null ? "BodyForm[as decoded]" : "BodyForm[" + canonical.length + " bytes]";
    }

    /** One pass over one encoded message: its sections, and the form of its body sections. */
    private static final class Scan {
        private static final String[] SYMBOLIC = {"amqp:header:list", "amqp:delivery-annotations:map",
            "amqp:message-annotations:map", "amqp:properties:list", "amqp:application-properties:map",
            "amqp:data:binary", "amqp:amqp-sequence:list", "amqp:amqp-value:*", "amqp:footer:map"};

        private final ProtonBuffer in;
        private final CanonicalValues values;

        Scan(ProtonBuffer in) {
            this.in = in;
            this.values = new CanonicalValues(in);
        }

        BodyForm body() {
            int end = in.getWriteOffset();
            int pos = in.getReadOffset();
            int bodies = 0;
            int firstCode = 0;
            int firstValue = 0;
            while (pos < end) {
                if (values.u8(pos) != 0x00) {
                    throw new CanonicalValues.Malformed();
                }
                int code = sectionCode(pos + 1);
                int value = values.skip(pos + 1, 0);
                pos = values.skip(value, 0);
                if (isBody(code) && bodies++ == 0) {
                    firstCode = code;
                    firstValue = value;
                }
            }
            if (bodies == 0 || bodies == 1 && (firstCode == DATA || firstCode == VALUE
                    && bytesOrText(values.u8(firstValue)))) {
                return AS_DECODED;
            }
            values.put(TAG, 0, TAG.length);
            pos = in.getReadOffset();
            while (pos < end) {
                int code = sectionCode(pos + 1);
                int value = values.skip(pos + 1, 0);
                pos = values.skip(value, 0);
                if (isBody(code)) {
                    values.put(code);
                    if (values.value(value, 0) != pos) {
                        throw new CanonicalValues.Malformed();
                    }
                }
            }
            return new BodyForm(values.written());
        }

        private static boolean isBody(int code) {
            return code == DATA || code == SEQUENCE || code == VALUE;
        }

        private static boolean bytesOrText(int constructor) {
            return switch (constructor) {
                case 0x40, 0xa0, 0xb0, 0xa1, 0xb1, 0xa3, 0xb3 -> true;
                default -> false;
            };
        }

        /** @return the section code of the descriptor at {@code pos} (0x70..0x78), or -1 for another descriptor */
        private int sectionCode(int pos) {
            int c = values.u8(pos);
            long code;
            if (c == 0x53) {
                code = values.u8(pos + 1);
            } else if (c == 0x80) {
                values.check(pos + 1, 8);
                code = in.getLong(pos + 1);
            } else if (c == 0x44) {
                code = 0;
            } else if (c == 0xa3 || c == 0xb3) {
                int length = c == 0xa3 ? values.u8(pos + 1) : values.u32(pos + 1);
                int start = pos + (c == 0xa3 ? 2 : 5);
                values.check(start, length);
                byte[] bytes = new byte[length];
                in.copyInto(start, bytes, 0, length);
                String name = new String(bytes, StandardCharsets.US_ASCII);
                code = -1;
                for (int i = 0; i < SYMBOLIC.length; i++) {
                    if (SYMBOLIC[i].equals(name)) {
                        code = 0x70 + i;
                    }
                }
            } else {
                throw new CanonicalValues.Malformed();
            }
            return code >= 0x70 && code <= 0x78 ? (int) code : -1;
        }
    }
}

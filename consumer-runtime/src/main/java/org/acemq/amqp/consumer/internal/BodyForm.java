package org.acemq.amqp.consumer.internal;

import java.util.Arrays;
import java.util.Collection;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.buffer.ProtonBufferAllocator;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.codec.CodecFactory;
import org.apache.qpid.protonj2.codec.Encoder;
import org.apache.qpid.protonj2.codec.EncoderState;
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
 * So two decodes of one message, a redelivery, and a re-publish of equal content by any client give the same form;
 * values that differ in any way, including only in their AMQP type (a {@code long} 5 and a {@code timestamp} 5, a
 * string and a symbol inside a map), give different forms. The form is never valid AMQP (the counts replace the sizes);
 * it is only hashed.
 *
 * <p>When the runtime cannot read protonj2's encoded message ({@link WholePayload} returns null), {@link #of(Message)}
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
    /** Deeper nesting than this is not scanned (protonj2's decoder recurses too; such a body falls back). */
    private static final int MAX_DEPTH = 400;

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
     *     {@link WholePayload})
     * @return its body's form, or null if the bytes are not an AMQP message this can read (the caller then uses
     *     {@link #of(Message)}, once protonj2 has decoded it)
     */
    static BodyForm scan(ProtonBuffer message) {
        try {
            return new Scan(message).body();
        } catch (Malformed | IndexOutOfBoundsException e) {
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
        Encoder encoder = CodecFactory.getDefaultEncoder();
        EncoderState state = encoder.newEncoderState();
        ProtonBuffer encoded = ProtonBufferAllocator.defaultAllocator().allocateHeapBuffer(256);
        for (Section<?> section : sections) {
            encoder.writeObject(encoded, state, section);
        }
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

    /** The encoding is not one this reads. */
    private static final class Malformed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Malformed() {
            super(null, null, false, false);
        }
    }

    /** One pass over one encoded message. */
    private static final class Scan {
        private final ProtonBuffer in;
        private final int end;
        /**
         * The most the form may take: a value grows at most ninefold (a one-byte {@code ulong0} becomes nine bytes),
         * except in an array of a zero-width type, whose elements take no bytes at all. Past this bound the body is
         * taken as unreadable here (and its form computed from the decoded message).
         */
        private final long limit;
        private byte[] out;
        private int size;

        Scan(ProtonBuffer in) {
            this.in = in;
            this.end = in.getWriteOffset();
            this.limit = Math.min(Integer.MAX_VALUE - 16, 16L * (end - in.getReadOffset()) + 65536);
        }

        BodyForm body() {
            int pos = in.getReadOffset();
            int bodies = 0;
            int firstCode = 0;
            int firstValue = 0;
            while (pos < end) {
                if (u8(pos) != 0x00) {
                    throw new Malformed();
                }
                int code = sectionCode(pos + 1);
                int value = skip(pos + 1, 0);
                pos = skip(value, 0);
                if (code == DATA || code == SEQUENCE || code == VALUE) {
                    if (bodies++ == 0) {
                        firstCode = code;
                        firstValue = value;
                    }
                }
            }
            if (pos != end) {
                throw new Malformed();
            }
            if (bodies == 0 || bodies == 1 && (firstCode == DATA || firstCode == VALUE && bytesOrText(u8(firstValue)))) {
                return AS_DECODED;
            }
            out = new byte[Math.max(64, Math.min(end - in.getReadOffset() + TAG.length, 1 << 20))];
            put(TAG, 0, TAG.length);
            pos = in.getReadOffset();
            while (pos < end) {
                int code = sectionCode(pos + 1);
                int value = skip(pos + 1, 0);
                pos = skip(value, 0);
                if (code == DATA || code == SEQUENCE || code == VALUE) {
                    put(code);
                    if (value(value, 0) != pos) {
                        throw new Malformed();
                    }
                }
            }
            return new BodyForm(Arrays.copyOf(out, size));
        }

        private static boolean bytesOrText(int constructor) {
            return switch (constructor) {
                case 0x40, 0xa0, 0xb0, 0xa1, 0xb1, 0xa3, 0xb3 -> true;
                default -> false;
            };
        }

        /** @return the section code of the descriptor at {@code pos} (0x70..0x78), or -1 for another descriptor */
        private int sectionCode(int pos) {
            int c = u8(pos);
            long code;
            if (c == 0x53) {
                code = u8(pos + 1);
            } else if (c == 0x80) {
                check(pos + 1, 8);
                code = in.getLong(pos + 1);
            } else if (c == 0x44) {
                code = 0;
            } else if (c == 0xa3 || c == 0xb3) {
                int length = c == 0xa3 ? u8(pos + 1) : u32(pos + 1);
                int start = pos + (c == 0xa3 ? 2 : 5);
                check(start, length);
                code = symbolicCode(start, length);
            } else {
                throw new Malformed();
            }
            return code >= 0x70 && code <= 0x78 ? (int) code : -1;
        }

        private static final String[] SYMBOLIC = {"amqp:header:list", "amqp:delivery-annotations:map",
            "amqp:message-annotations:map", "amqp:properties:list", "amqp:application-properties:map",
            "amqp:data:binary", "amqp:amqp-sequence:list", "amqp:amqp-value:*", "amqp:footer:map"};

        private int symbolicCode(int start, int length) {
            byte[] name = new byte[length];
            in.copyInto(start, name, 0, length);
            String text = new String(name, java.nio.charset.StandardCharsets.US_ASCII);
            for (int i = 0; i < SYMBOLIC.length; i++) {
                if (SYMBOLIC[i].equals(text)) {
                    return 0x70 + i;
                }
            }
            return -1;
        }

        /** @return the position after the value (with its constructor) at {@code pos} */
        private int skip(int pos, int depth) {
            if (depth > MAX_DEPTH) {
                throw new Malformed();
            }
            int c = u8(pos);
            if (c == 0x00) {
                return skip(skip(pos + 1, depth + 1), depth + 1);
            }
            return after(c, pos + 1);
        }

        /** @return the position after the payload, starting at {@code pos}, of a value of primitive constructor c */
        private int after(int c, int pos) {
            int next = switch (c >> 4) {
                case 0x4 -> pos;
                case 0x5 -> pos + 1;
                case 0x6 -> pos + 2;
                case 0x7 -> pos + 4;
                case 0x8 -> pos + 8;
                case 0x9 -> pos + 16;
                case 0xa, 0xc, 0xe -> pos + 1 + u8(pos);
                case 0xb, 0xd, 0xf -> {
                    int length = u32(pos);
                    check(pos + 4, length);
                    yield pos + 4 + length;
                }
                default -> throw new Malformed();
            };
            if (next > end || next < pos) {
                throw new Malformed();
            }
            return next;
        }

        /** Writes the canonical form of the value at {@code pos}. @return the position after it */
        private int value(int pos, int depth) {
            if (depth > MAX_DEPTH) {
                throw new Malformed();
            }
            int c = u8(pos);
            if (c == 0x00) {
                put(0x00);
                return value(value(pos + 1, depth + 1), depth + 1);
            }
            put(canonical(c));
            return payload(c, pos + 1, depth);
        }

        /** Writes the canonical payload of a value of primitive constructor c. @return the position after it */
        private int payload(int c, int pos, int depth) {
            switch (c) {
                case 0x40: // null
                    return pos;
                case 0x41: // true
                    put(1);
                    return pos;
                case 0x42: // false
                    put(0);
                    return pos;
                case 0x56: // boolean
                    put(u8(pos) == 0 ? 0 : 1);
                    return pos + 1;
                case 0x43: // uint0
                    putInt(0);
                    return pos;
                case 0x52: // smalluint
                    putInt(u8(pos));
                    return pos + 1;
                case 0x44: // ulong0
                    putLong(0);
                    return pos;
                case 0x53: // smallulong
                    putLong(u8(pos));
                    return pos + 1;
                case 0x54: // smallint
                    putInt(in.getByte(pos));
                    return pos + 1;
                case 0x55: // smalllong
                    putLong(in.getByte(pos));
                    return pos + 1;
                case 0x45: // list0
                    putInt(0);
                    return pos;
                case 0xa0, 0xa1, 0xa3: // vbin8, str8, sym8
                    return bytes(pos + 1, u8(pos));
                case 0xb0, 0xb1, 0xb3: // vbin32, str32, sym32
                    return bytes(pos + 4, u32(pos));
                case 0xc0, 0xc1: // list8, map8
                    return items(pos + 2, u8(pos + 1), after(c, pos), depth);
                case 0xd0, 0xd1: // list32, map32
                    return items(pos + 8, u32(pos + 4), after(c, pos), depth);
                case 0xe0: // array8
                    return array(pos + 2, u8(pos + 1), after(c, pos), depth);
                case 0xf0: // array32
                    return array(pos + 8, u32(pos + 4), after(c, pos), depth);
                default:
                    int next = after(c, pos);
                    if (c >> 4 >= 0xa) { // a variable-width type AMQP does not define: its bytes, as variable-width
                        int start = c >> 4 == 0xa || c >> 4 == 0xc || c >> 4 == 0xe ? pos + 1 : pos + 4;
                        return bytes(start, next - start);
                    }
                    copy(pos, next - pos); // a fixed-width value: as encoded
                    return next;
            }
        }

        private int bytes(int start, int length) {
            check(start, length);
            putInt(length);
            copy(start, length);
            return start + length;
        }

        private int items(int pos, int count, int limit, int depth) {
            putInt(count);
            for (int i = 0; i < count; i++) {
                pos = value(pos, depth + 1);
            }
            if (pos != limit) {
                throw new Malformed();
            }
            return limit;
        }

        private int array(int pos, int count, int limit, int depth) {
            putInt(count);
            while (u8(pos) == 0x00) { // a described element type: its descriptor, then the primitive constructor
                put(0x00);
                pos = value(pos + 1, depth + 1);
            }
            int c = u8(pos++);
            put(canonical(c));
            if (c >> 4 == 0x4) { // elements that take no bytes (null, true, uint0, ...) but may take some in the form
                int before = size;
                payload(c, pos, depth + 1);
                if ((long) (size - before) * count > limit) {
                    throw new Malformed();
                }
                if (size == before) {
                    return pos == limit ? limit : fail(); // nulls: nothing to write for any of them
                }
                size = before;
            }
            for (int i = 0; i < count; i++) {
                pos = payload(c, pos, depth + 1);
            }
            if (pos != limit) {
                throw new Malformed();
            }
            return limit;
        }

        private static int fail() {
            throw new Malformed();
        }

        /** @return the one constructor each type has in the canonical form */
        private static int canonical(int c) {
            return switch (c) {
                case 0x41, 0x42 -> 0x56;
                case 0x43, 0x52 -> 0x70;
                case 0x44, 0x53 -> 0x80;
                case 0x54 -> 0x71;
                case 0x55 -> 0x81;
                case 0xa0 -> 0xb0;
                case 0xa1 -> 0xb1;
                case 0xa3 -> 0xb3;
                case 0x45, 0xc0 -> 0xd0;
                case 0xc1 -> 0xd1;
                case 0xe0 -> 0xf0;
                default -> c;
            };
        }

        private int u8(int pos) {
            if (pos >= end) {
                throw new Malformed();
            }
            return in.getByte(pos) & 0xff;
        }

        /** @return a 4-byte length or count, which must fit an int */
        private int u32(int pos) {
            if (pos + 4 > end) {
                throw new Malformed();
            }
            int v = in.getInt(pos);
            if (v < 0) {
                throw new Malformed();
            }
            return v;
        }

        private void check(int start, int length) {
            if (length < 0 || start > end || length > end - start) {
                throw new Malformed();
            }
        }

        private void ensure(int more) {
            if (size + more > out.length) {
                if ((long) size + more > limit) {
                    throw new Malformed();
                }
                out = Arrays.copyOf(out, (int) Math.min(limit, Math.max((long) out.length * 2, (long) size + more)));
            }
        }

        private void put(int b) {
            ensure(1);
            out[size++] = (byte) b;
        }

        private void put(byte[] bytes, int offset, int length) {
            ensure(length);
            System.arraycopy(bytes, offset, out, size, length);
            size += length;
        }

        private void putInt(int v) {
            ensure(4);
            out[size++] = (byte) (v >>> 24);
            out[size++] = (byte) (v >>> 16);
            out[size++] = (byte) (v >>> 8);
            out[size++] = (byte) v;
        }

        private void putLong(long v) {
            putInt((int) (v >>> 32));
            putInt((int) v);
        }

        private void copy(int start, int length) {
            check(start, length);
            ensure(length);
            in.copyInto(start, out, size, length);
            size += length;
        }
    }
}

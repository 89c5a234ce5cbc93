package org.acemq.amqp.consumer.internal;

import java.util.Arrays;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;

/**
 * Reads AMQP-encoded values from a buffer, by absolute position (its offsets do not move), and writes their canonical
 * form: one constructor per type (the widest: {@code uint} for {@code smalluint} and {@code uint0}, {@code boolean}
 * with one byte 0 or 1 for {@code true} and {@code false}, ...), fixed-width payloads, a 4-byte length before the bytes
 * of a binary, string or symbol, a 4-byte element count before the elements of a list, map or array (an array's element
 * constructor once, then each element's payload), {@code 0x00}, the descriptor and the value for a described value.
 * Types AMQP does not define are kept as encoded, by the width their constructor's subcategory gives. See
 * {@link BodyForm} for what the form is for.
 *
 * <p>Bounded: nesting deeper than {@value #MAX_DEPTH}, a length or count past the buffer, or a form longer than
 * sixteen times the input (plus 64 KiB) is {@link Malformed}. One instance per message, one thread.
 */
final class CanonicalValues {

    /** Deeper nesting than this is not read (protonj2's decoder recurses too; such a body falls back). */
    static final int MAX_DEPTH = 400;

    /** The encoding is not one this reads. */
    static final class Malformed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Malformed() {
            super(null, null, false, false);
        }
    }

    private final ProtonBuffer in;
    private final int end;
    /**
     * The most the form may take: a value grows at most ninefold (a one-byte {@code ulong0} becomes nine bytes), except
     * in an array of a zero-width type, whose elements take no bytes at all. Past this bound the body is taken as
     * unreadable here (and its form computed from the decoded message).
     */
    private final long limit;
    private byte[] out;
    private int size;

    /** @param in the encoded values, from its read offset to its write offset */
    CanonicalValues(ProtonBuffer in) {
        this.in = in;
        this.end = in.getWriteOffset();
        this.limit = Math.min(Integer.MAX_VALUE - 16, 16L * (end - in.getReadOffset()) + 65536);
    }

    /** @return the form written so far */
    byte[] written() {
        return out == null ? new byte[0] : Arrays.copyOf(out, size);
    }

    /** @return the position after the value (with its constructor) at {@code pos} */
    int skip(int pos, int depth) {
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
    int value(int pos, int depth) {
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
            case 0x40 -> { // null
                return pos;
            }
            case 0x41, 0x42 -> { // true, false
                put(c == 0x41 ? 1 : 0);
                return pos;
            }
            case 0x56 -> { // boolean
                put(u8(pos) == 0 ? 0 : 1);
                return pos + 1;
            }
            case 0x43, 0x45 -> { // uint0, list0 (a count of 0)
                putInt(0);
                return pos;
            }
            case 0x52, 0x54 -> { // smalluint, smallint
                putInt(c == 0x52 ? u8(pos) : in.getByte(pos));
                return pos + 1;
            }
            case 0x44 -> { // ulong0
                putLong(0);
                return pos;
            }
            case 0x53, 0x55 -> { // smallulong, smalllong
                putLong(c == 0x53 ? u8(pos) : in.getByte(pos));
                return pos + 1;
            }
            case 0xa0, 0xa1, 0xa3 -> { // vbin8, str8, sym8
                return bytes(pos + 1, u8(pos));
            }
            case 0xb0, 0xb1, 0xb3 -> { // vbin32, str32, sym32
                return bytes(pos + 4, u32(pos));
            }
            case 0xc0, 0xc1 -> { // list8, map8
                return items(pos + 2, u8(pos + 1), after(c, pos), depth);
            }
            case 0xd0, 0xd1 -> { // list32, map32
                return items(pos + 8, u32(pos + 4), after(c, pos), depth);
            }
            case 0xe0, 0xf0 -> { // array8, array32
                return c == 0xe0 ? array(pos + 2, u8(pos + 1), after(c, pos), depth)
                        : array(pos + 8, u32(pos + 4), after(c, pos), depth);
            }
            default -> {
                int next = after(c, pos);
                if (c >> 4 >= 0xa) { // a variable-width type AMQP does not define: its bytes, as variable-width
                    int start = c >> 4 == 0xa || c >> 4 == 0xc || c >> 4 == 0xe ? pos + 1 : pos + 4;
                    return bytes(start, next - start);
                }
                copy(pos, next - pos); // a fixed-width value: as encoded
                return next;
            }
        }
    }

    private int bytes(int start, int length) {
        check(start, length);
        putInt(length);
        copy(start, length);
        return start + length;
    }

    /** Writes {@code count} values from {@code pos}, which must end at {@code stop}. @return {@code stop} */
    private int items(int pos, int count, int stop, int depth) {
        putInt(count);
        for (int i = 0; i < count; i++) {
            pos = value(pos, depth + 1);
        }
        return ended(pos, stop);
    }

    private static int ended(int pos, int stop) {
        if (pos != stop) {
            throw new Malformed();
        }
        return stop;
    }

    /** Writes an array's {@code count} elements from {@code pos}, which must end at {@code stop}. @return stop */
    private int array(int pos, int count, int stop, int depth) {
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
                return ended(pos, stop); // nulls: nothing to write for any of them
            }
            size = before;
        }
        for (int i = 0; i < count; i++) {
            pos = payload(c, pos, depth + 1);
        }
        return ended(pos, stop);
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

    int u8(int pos) {
        if (pos >= end) {
            throw new Malformed();
        }
        return in.getByte(pos) & 0xff;
    }

    /** @return a 4-byte length or count, which must fit an int */
    int u32(int pos) {
        if (pos + 4 > end || in.getInt(pos) < 0) {
            throw new Malformed();
        }
        return in.getInt(pos);
    }

    void check(int start, int length) {
        if (length < 0 || start > end || length > end - start) {
            throw new Malformed();
        }
    }

    private void ensure(int more) {
        if (out == null) {
            out = new byte[(int) Math.max(64, Math.min(limit, Math.min(end - in.getReadOffset() + 16L, 1 << 20)))];
        }
        if (size + more > out.length) {
            if ((long) size + more > limit) {
                throw new Malformed();
            }
            out = Arrays.copyOf(out, (int) Math.min(limit, Math.max((long) out.length * 2, (long) size + more)));
        }
    }

    void put(int b) {
        ensure(1);
        out[size++] = (byte) b;
    }

    void put(byte[] bytes, int offset, int length) {
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

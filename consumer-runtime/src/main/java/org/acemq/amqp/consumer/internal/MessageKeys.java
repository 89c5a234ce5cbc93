package org.acemq.amqp.consumer.internal;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.UUID;
import org.acemq.amqp.api.MessageIds;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Decimal128;
import org.apache.qpid.protonj2.types.Decimal32;
import org.apache.qpid.protonj2.types.Decimal64;
import org.apache.qpid.protonj2.types.UnsignedLong;

/**
 * Turns AMQP message-ids into store keys. Each AMQP type gets its own prefix, so values of different types never
 * collide: the string "1" is {@code s:1}, the ulong 1 is {@code n:1}, a UUID is {@code u:<uuid>}, binary is
 * {@code b:<hex>}. A key that no store could take as it is (longer than {@link MessageIds#MAX_LENGTH}, or holding a NUL
 * character or an unpaired surrogate, see {@link MessageIds#requireValid}) is replaced by {@code h:<sha-256 of the
 * key>}, the same way for every store. The hash is taken over the key's generalised UTF-8 form (UTF-8, with an unpaired
 * surrogate encoded as the three bytes of its code unit), which is UTF-8 itself for every well-formed key and never
 * maps two different keys to the same bytes.
 */
public final class MessageKeys {

    private static final HexFormat HEX = HexFormat.of();

    private MessageKeys() {
    }

    /**
     * @param messageId an AMQP message-id as protonj2 decodes it (String, UUID, UnsignedLong, Binary), or a JDK value
     * @return the key, or null if {@code messageId} is null or an empty string
     */
    public static String fromMessageId(Object messageId) {
        String key = typed(messageId);
        return key == null ? null : bounded(key);
    }

    /**
     * @param value an AMQP message-id or key value
     * @return its typed key, not yet bounded; null if {@code value} is null or an empty string
     */
    static String typed(Object messageId) {
        if (messageId == null) {
            return null;
        }
        String key;
        if (messageId instanceof String s) {
            if (s.isEmpty()) {
                return null;
            }
            key = "s:" + s;
        } else if (messageId instanceof UUID u) {
            key = "u:" + u;
        } else if (messageId instanceof UnsignedLong n) {
            key = "n:" + Long.toUnsignedString(n.longValue());
        } else if (messageId instanceof Binary b) {
            key = "b:" + HEX.formatHex(b.asByteArray());
        } else if (messageId instanceof byte[] bytes) {
            key = "b:" + HEX.formatHex(bytes);
        } else if (messageId instanceof Long || messageId instanceof Integer) {
            key = "n:" + messageId;
        } else if (messageId instanceof Decimal32 d) {
            key = "x:Decimal32:" + HEX.toHexDigits(d.getBits()); // protonj2's decimals have no toString of their own
        } else if (messageId instanceof Decimal64 d) {
            key = "x:Decimal64:" + HEX.toHexDigits(d.getBits());
        } else if (messageId instanceof Decimal128 d) {
            key = "x:Decimal128:" + HEX.toHexDigits(d.getMostSignificantBits())
                    + HEX.toHexDigits(d.getLeastSignificantBits());
        } else {
            // Not a legal AMQP message-id type; keep it distinct from the legal ones.
            key = "x:" + messageId.getClass().getSimpleName() + ":" + messageId;
        }
        return key;
    }

    /**
     * The store key of a typed key within a scope: {@code <escaped scope>|<key>}, with the key replaced by
     * {@code h:<sha-256 of the key>} when the whole would be longer than {@link MessageIds#MAX_LENGTH} or the key
     * holds a NUL character or an unpaired surrogate.
     *
     * @param escapedScope the scope, escaped ({@link MessageIds#escapeScope})
     * @param key a typed key, or null
     * @return the store key, or null if {@code key} is null
     */
    static String inScope(String escapedScope, String key) {
        if (key == null) {
            return null;
        }
        return escapedScope + MessageIds.SCOPE_SEPARATOR
                + fitted(key, MessageIds.MAX_LENGTH - escapedScope.length() - 1);
    }

    /**
     * @param name the application property the key was taken from
     * @param value its value
     * @return the typed key {@code p:<name>=<typed value>}, not yet bounded; null if the value is null or empty
     */
    static String property(String name, Object value) {
        String inner = typed(value);
        return inner == null ? null : "p:" + name + "=" + inner;
    }

    /**
     * @param body the bytes a body hash is computed over (a data section's bytes, the UTF-8 text of a string, or the
     *     canonical form of a structured body: see the README, "What counts as a duplicate")
     * @return {@code h:body:<sha-256>} of the bytes
     */
    public static String fromBodyBytes(byte[] body) {
        return "h:body:" + HEX.formatHex(sha256(body));
    }

    private static String bounded(String key) {
        return fitted(key, MessageIds.MAX_LENGTH);
    }

    /** @return {@code key} if it has at most {@code room} characters and every store can hold it, else its hash */
    private static String fitted(String key, int room) {
        return key.length() <= room && MessageIds.firstUnstorable(key) < 0 ? key : hashed(key);
    }

    /** @return {@code h:<sha-256>} of the text's generalised UTF-8 form: a fixed-length stand-in any store can hold */
    static String hashed(String text) {
        return "h:" + HEX.formatHex(sha256(generalisedUtf8(text)));
    }

    /** UTF-8, except that an unpaired surrogate is encoded like any other code unit of the BMP (three bytes). */
    static byte[] generalisedUtf8(String text) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            int c = text.charAt(i);
            if (Character.isHighSurrogate((char) c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                c = Character.toCodePoint((char) c, text.charAt(++i));
            }
            if (c < 0x80) {
                out.write(c);
            } else if (c < 0x800) {
                out.write(0xc0 | (c >> 6));
                out.write(0x80 | (c & 0x3f));
            } else if (c < 0x10000) {
                out.write(0xe0 | (c >> 12));
                out.write(0x80 | ((c >> 6) & 0x3f));
                out.write(0x80 | (c & 0x3f));
            } else {
                out.write(0xf0 | (c >> 18));
                out.write(0x80 | ((c >> 12) & 0x3f));
                out.write(0x80 | ((c >> 6) & 0x3f));
                out.write(0x80 | (c & 0x3f));
            }
        }
        return out.toByteArray();
    }

    private static byte[] sha256(byte[] bytes) {
        return newSha256().digest(bytes);
    }

    /** @return a new SHA-256 digest */
    static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }
}

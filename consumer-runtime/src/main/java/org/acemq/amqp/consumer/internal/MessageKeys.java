package org.acemq.amqp.consumer.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.UUID;
import org.acemq.amqp.api.MessageIds;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.UnsignedLong;

/**
 * Turns AMQP message-ids into store keys. Each AMQP type gets its own prefix, so values of different types never
 * collide: the string "1" is {@code s:1}, the ulong 1 is {@code n:1}, a UUID is {@code u:<uuid>}, binary is
 * {@code b:<hex>}. A key longer than {@link MessageIds#MAX_LENGTH} is replaced by {@code h:<sha-256 of the key>}.
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
        } else {
            // Not a legal AMQP message-id type; keep it distinct from the legal ones.
            key = "x:" + messageId.getClass().getSimpleName() + ":" + messageId;
        }
        return bounded(key);
    }

    /**
     * @param name the application property the key was taken from
     * @param value its value
     * @return the key, or null if the value is null or empty
     */
    public static String fromProperty(String name, Object value) {
        String inner = fromMessageId(value);
        return inner == null ? null : bounded("p:" + name + "=" + inner);
    }

    /**
     * @param body the body bytes (data section bytes, or the UTF-8 text of an amqp-value string)
     * @return {@code h:<sha-256>} of the bytes
     */
    public static String fromBodyBytes(byte[] body) {
        return "h:body:" + HEX.formatHex(sha256(body));
    }

    private static String bounded(String key) {
        if (key.length() <= MessageIds.MAX_LENGTH) {
            return key;
        }
        return "h:" + HEX.formatHex(sha256(key.getBytes(StandardCharsets.UTF_8)));
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }
}

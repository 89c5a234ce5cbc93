package org.acemq.amqp.api;

import java.util.Objects;

/** The rules for identifiers passed to an {@link IdempotencyStore}, shared by every implementation. */
public final class MessageIds {

    /**
     * The longest identifier a store accepts, in {@code char}s: 512. Long enough for any string, UUID or numeric
     * AMQP message-id with its type prefix and for a 255-byte binary id in hex; short enough that a PostgreSQL
     * primary key on it stays efficient. The runtime hashes longer AMQP ids to a fixed-length key instead.
     */
    public static final int MAX_LENGTH = 512;

    /** The longest fingerprint a store records, in {@code char}s: 128. The runtime's are 32 hexadecimal digits. */
    public static final int MAX_FINGERPRINT_LENGTH = 128;

    /**
     * The longest scope, in {@code char}s once escaped: 200. A scope and its separator then leave at least 311
     * characters of {@link #MAX_LENGTH} for the key itself.
     */
    public static final int MAX_SCOPE_LENGTH = 200;

    /** Separates the scope from the key in a scoped store key: {@code <scope>|<key>}. */
    public static final char SCOPE_SEPARATOR = '|';

    private static final int PRINTABLE_LENGTH = 100;

    private MessageIds() {
    }

    /**
     * Checks an identifier against the rules: not null, not blank, at most {@link #MAX_LENGTH} {@code char}s, and
     * storable as it is by every store, so no NUL character ({@code U+0000}, which PostgreSQL text cannot hold) and
     * no unpaired surrogate (which has no UTF-8 form, so a store could silently turn two different identifiers into
     * the same bytes). The runtime never passes such an identifier: it hashes raw AMQP ids that break these rules to
     * a {@code h:<sha-256>} key, the same way for every store.
     *
     * @param messageId the identifier
     * @return {@code messageId}, for chaining
     * @throws NullPointerException if it is null
     * @throws InvalidMessageIdException if it is blank, longer than {@link #MAX_LENGTH}, or holds a NUL character or
     *     an unpaired surrogate
     */
    public static String requireValid(String messageId) {
        Objects.requireNonNull(messageId, "messageId must not be null");
        if (messageId.length() > MAX_LENGTH) {
            throw new InvalidMessageIdException(messageId, "messageId must be at most " + MAX_LENGTH
                    + " characters, but was " + messageId.length(), null);
        }
        int bad = firstUnstorable(messageId);
        if (bad >= 0) {
            throw new InvalidMessageIdException(messageId, "messageId must not hold NUL characters or unpaired "
                    + "surrogates, but had U+" + String.format("%04X", (int) messageId.charAt(bad)) + " at index " + bad
                    + " ('" + printable(messageId) + "')", null);
        }
        if (messageId.isBlank()) {
            throw new InvalidMessageIdException(messageId, "messageId must not be blank, but was '"
                    + printable(messageId) + "'", null);
        }
        return messageId;
    }

    /**
     * Checks a fingerprint (see {@link LeasedIdempotencyStore#acquire(String, String)}): null (none) or a non-blank
     * text of at most {@link #MAX_FINGERPRINT_LENGTH} characters without NUL characters or unpaired surrogates.
     *
     * @param fingerprint the fingerprint, or null
     * @return {@code fingerprint}, for chaining
     * @throws IllegalArgumentException if it breaks the rules
     */
    public static String requireValidFingerprint(String fingerprint) {
        if (fingerprint == null) {
            return null;
        }
        if (fingerprint.isBlank() || fingerprint.length() > MAX_FINGERPRINT_LENGTH
                || firstUnstorable(fingerprint) >= 0) {
            throw new IllegalArgumentException("fingerprint must be non-blank, at most " + MAX_FINGERPRINT_LENGTH
                    + " characters, without NUL characters or unpaired surrogates, but was '" + printable(fingerprint)
                    + "'");
        }
        return fingerprint;
    }

    /**
     * The store key of {@code key} within {@code scope}: the scope with every {@code %} written {@code %25} and every
     * {@code |} written {@code %7C}, then {@link #SCOPE_SEPARATOR}, then the key as it is. The escaping makes the form
     * one-to-one: no two (scope, key) pairs give the same store key, and {@link #scopeOf} reads the scope back. The
     * runtime keys every delivery this way, so that the same message-id consumed for two endpoints is two identifiers
     * to the store.
     *
     * @param scope the scope: not blank, no NUL character or unpaired surrogate, at most {@link #MAX_SCOPE_LENGTH}
     *     characters once escaped
     * @param key the key within the scope (for example {@code s:order-1})
     * @return the store key; not checked against {@link #requireValid} (the runtime bounds the key part first)
     * @throws NullPointerException if either is null
     * @throws IllegalArgumentException if the scope breaks the rules
     */
    public static String scoped(String scope, String key) {
        Objects.requireNonNull(key, "key must not be null");
        return escapeScope(scope) + SCOPE_SEPARATOR + key;
    }

    /**
     * @param scope a scope
     * @return its escaped form, as it starts a store key (see {@link #scoped})
     * @throws NullPointerException if it is null
     * @throws IllegalArgumentException if it is blank, holds a NUL character or an unpaired surrogate, or is longer
     *     than {@link #MAX_SCOPE_LENGTH} once escaped
     */
    public static String escapeScope(String scope) {
        Objects.requireNonNull(scope, "scope must not be null");
        String escaped = scope.indexOf('%') < 0 && scope.indexOf(SCOPE_SEPARATOR) < 0 ? scope
                : scope.replace("%", "%25").replace("|", "%7C");
        if (scope.isBlank() || firstUnstorable(scope) >= 0 || escaped.length() > MAX_SCOPE_LENGTH) {
            throw new IllegalArgumentException("scope must be non-blank, at most " + MAX_SCOPE_LENGTH
                    + " characters (with % and | escaped), without NUL characters or unpaired surrogates, but was '"
                    + printable(scope) + "'");
        }
        return escaped;
    }

    /**
     * @param storeKey a store key
     * @return the scope of a key made by {@link #scoped}, unescaped; null for a key without a scope
     */
    public static String scopeOf(String storeKey) {
        int at = storeKey == null ? -1 : storeKey.indexOf(SCOPE_SEPARATOR);
        if (at <= 0) {
            return null;
        }
        return storeKey.substring(0, at).replace("%7C", "|").replace("%25", "%");
    }

    /**
     * A form of an identifier (or any text) that is safe in a log line or an exception message: every character
     * below U+0020, U+007F to U+009F, and every surrogate that is not part of a pair is written as
     * <code>&#92;uXXXX</code> (so a NUL reads <code>&#92;u0000</code>), a backslash as <code>&#92;&#92;</code>, and
     * text longer than 100 characters is cut to its first 100 (never inside a surrogate pair), followed by
     * {@code …(N chars)}. Stores and the runtime use it wherever an identifier goes into a message.
     *
     * @param text any text; null gives {@code "null"}
     * @return the printable form
     */
    public static String printable(String text) {
        if (text == null) {
            return "null";
        }
        int shown = Math.min(text.length(), PRINTABLE_LENGTH);
        if (shown < text.length() && Character.isHighSurrogate(text.charAt(shown - 1))) {
            shown--;
        }
        StringBuilder out = null;
        for (int i = 0; i < shown; i++) {
            char c = text.charAt(i);
            boolean escape = c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == '\\'
                    || (Character.isSurrogate(c) && !pairedAt(text, i));
            if (escape && out == null) {
                out = new StringBuilder(shown + 16).append(text, 0, i);
            }
            if (out != null) {
                if (c == '\\') {
                    out.append("\\\\");
                } else if (escape) {
                    out.append(String.format("\\u%04X", (int) c));
                } else {
                    out.append(c);
                }
            }
        }
        String result = out == null ? text.substring(0, shown) : out.toString();
        return text.length() > shown ? result + "…(" + text.length() + " chars)" : result;
    }

    private static boolean pairedAt(String text, int i) {
        char c = text.charAt(i);
        return Character.isHighSurrogate(c) ? i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))
                : i > 0 && Character.isHighSurrogate(text.charAt(i - 1));
    }

    /**
     * @param text any string
     * @return the index of the first NUL character or unpaired surrogate in {@code text}, or -1 if it has none
     */
    public static int firstUnstorable(String text) {
        for (int i = 0, n = text.length(); i < n; i++) {
            char c = text.charAt(i);
            if (c != 0 && c < Character.MIN_SURROGATE) {
                continue; // the common case: one comparison pair per character
            }
            if (c == 0 || Character.isLowSurrogate(c)) {
                return i;
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < n && Character.isLowSurrogate(text.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return i;
            }
        }
        return -1;
    }
}

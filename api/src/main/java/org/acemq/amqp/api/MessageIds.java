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
        if (messageId.isBlank()) {
            throw new InvalidMessageIdException("messageId must not be blank, but was '" + messageId + "'");
        }
        if (messageId.length() > MAX_LENGTH) {
            throw new InvalidMessageIdException("messageId must be at most " + MAX_LENGTH
                    + " characters, but was " + messageId.length());
        }
        int bad = firstUnstorable(messageId);
        if (bad >= 0) {
            throw new InvalidMessageIdException("messageId must not hold NUL characters or unpaired surrogates, but "
                    + "had U+" + String.format("%04X", (int) messageId.charAt(bad)) + " at index " + bad);
        }
        return messageId;
    }

    /**
     * @param text any string
     * @return the index of the first NUL character or unpaired surrogate in {@code text}, or -1 if it has none
     */
    public static int firstUnstorable(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == 0) {
                return i;
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                    i++;
                    continue;
                }
                return i;
            }
            if (Character.isLowSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }
}

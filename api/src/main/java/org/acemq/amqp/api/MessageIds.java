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
     * Checks an identifier against the rules.
     *
     * @param messageId the identifier
     * @return {@code messageId}, for chaining
     * @throws NullPointerException if it is null
     * @throws IllegalArgumentException if it is blank or longer than {@link #MAX_LENGTH}
     */
    public static String requireValid(String messageId) {
        Objects.requireNonNull(messageId, "messageId must not be null");
        if (messageId.isBlank()) {
            throw new IllegalArgumentException("messageId must not be blank, but was '" + messageId + "'");
        }
        if (messageId.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("messageId must be at most " + MAX_LENGTH
                    + " characters, but was " + messageId.length());
        }
        return messageId;
    }
}

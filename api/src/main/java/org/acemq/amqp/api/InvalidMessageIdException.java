package org.acemq.amqp.api;

/**
 * A store refuses one particular message identifier, while it is otherwise working: the identifier breaks the rules of
 * {@link MessageIds}, or the backing storage cannot represent it (for PostgreSQL, a data error of SQLState class 22).
 * Nothing was written.
 *
 * <p>This is a fact about one message, never an outage: the runtime settles that message once (rejected, condition
 * {@code acemq:invalid-message-id}) and goes on, where a {@link StoreUnavailableException} would pause consumption.
 * It extends {@link IllegalArgumentException} because the {@link IdempotencyStore} contract promises that exception
 * for bad identifiers.
 *
 * <p>{@link #messageId()} names the refused identifier when the thrower knows it, which every store shipped with
 * AceMQ does: a batch call ({@link LeasedIdempotencyStore#acquireAll}) uses it to say which of its identifiers was
 * refused. The message itself never holds the raw identifier, only {@linkplain MessageIds#printable a printable form}.
 */
public class InvalidMessageIdException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /** The refused identifier as it was given, or null when not known. */
    private final String messageId;

    /** @param message what is wrong with the identifier; never the raw identifier itself if it may hold control characters */
    public InvalidMessageIdException(String message) {
        this(null, message, null);
    }

    /**
     * @param message what is wrong with the identifier
     * @param cause the storage error that refused it
     */
    public InvalidMessageIdException(String message, Throwable cause) {
        this(null, message, cause);
    }

    /**
     * @param messageId the refused identifier as it was given (may hold the very characters that were refused), or
     *     null when not known
     * @param message what is wrong with the identifier, without the raw identifier
     * @param cause the storage error that refused it, or null
     */
    public InvalidMessageIdException(String messageId, String message, Throwable cause) {
        super(message, cause);
        this.messageId = messageId;
    }

    /**
     * @return the refused identifier exactly as it was passed to the store (so a batch caller can match it to its
     *     message), or null when the thrower did not say; escape it before logging it (see {@link MessageIds#printable})
     */
    public String messageId() {
        return messageId;
    }
}

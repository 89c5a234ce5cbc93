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
 */
public class InvalidMessageIdException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /** @param message what is wrong with the identifier; never the raw identifier itself if it may hold control characters */
    public InvalidMessageIdException(String message) {
        super(message);
    }

    /**
     * @param message what is wrong with the identifier
     * @param cause the storage error that refused it
     */
    public InvalidMessageIdException(String message, Throwable cause) {
        super(message, cause);
    }
}

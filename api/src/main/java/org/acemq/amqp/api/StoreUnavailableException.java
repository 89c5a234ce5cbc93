package org.acemq.amqp.api;

/**
 * An {@link IdempotencyStore} could not do what was asked because its backing storage is unreachable, failing or
 * full. The operation had no effect. The cause (for example an {@code SQLException}) is attached.
 *
 * <p>The runtime reacts by not running the handler, returning the delivery to the broker without counting an
 * attempt, and pausing credit until the store answers again.
 */
public class StoreUnavailableException extends AcemqException {

    private static final long serialVersionUID = 1L;

    /** @param message what failed */
    public StoreUnavailableException(String message) {
        super(message);
    }

    /**
     * @param message what failed
     * @param cause the underlying failure
     */
    public StoreUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}

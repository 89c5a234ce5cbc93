package org.acemq.amqp.api;

/**
 * Thrown by a {@link MessageHandler} to say that a message can never be processed (malformed, refers to something
 * that does not exist, violates a business rule), so retrying it is pointless.
 *
 * <p>The runtime settles such a delivery as AMQP {@code rejected}, with the error condition and the description
 * given here, which dead-letters it on brokers that support that. The claim is released first, so an operator
 * can re-drive the message from the dead-letter queue after fixing the cause.
 */
public class PermanentMessageException extends AcemqException {

    /** Serialization version of this class. */
    private static final long serialVersionUID = 1L;

    /** The AMQP error condition used when none is given. */
    public static final String DEFAULT_CONDITION = "acemq:permanent-failure";

    /** The AMQP error condition sent with the rejection. */
    private final String condition;

    /** @param description why the message cannot be processed; sent to the broker as the rejection description */
    public PermanentMessageException(String description) {
        this(DEFAULT_CONDITION, description, null);
    }

    /**
     * @param description why the message cannot be processed
     * @param cause the underlying failure
     */
    public PermanentMessageException(String description, Throwable cause) {
        this(DEFAULT_CONDITION, description, cause);
    }

    /**
     * @param condition the AMQP error condition symbol to reject with, for example {@code amqp:decode-error}
     * @param description why the message cannot be processed
     * @param cause the underlying failure, may be null
     */
    public PermanentMessageException(String condition, String description, Throwable cause) {
        super(description, cause);
        if (condition == null || condition.isBlank()) {
            throw new IllegalArgumentException("condition must not be blank, but was '" + condition + "'");
        }
        this.condition = condition;
    }

    /** @return the AMQP error condition to reject with */
    public String condition() {
        return condition;
    }
}

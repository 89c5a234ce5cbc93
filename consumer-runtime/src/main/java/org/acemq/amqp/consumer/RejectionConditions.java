package org.acemq.amqp.consumer;

import org.acemq.amqp.api.PermanentMessageException;

/**
 * Every AMQP error condition the consumer puts on a {@code rejected} outcome, in one place. Brokers that dead-letter
 * rejected messages keep the condition with the message, so an operator reading a dead-letter queue can tell why each
 * message is there.
 */
public final class RejectionConditions {

    /** The message cannot be decoded (broken AMQP encoding, or a body of a type the handler cannot read). */
    public static final String DECODE_ERROR = "amqp:decode-error";
    /** The message has no usable idempotency key (no message-id, and the {@link MissingIdPolicy} found none). */
    public static final String MISSING_MESSAGE_ID = "acemq:missing-message-id";
    /** The store refused the message's key ({@link org.acemq.amqp.api.InvalidMessageIdException}). */
    public static final String INVALID_MESSAGE_ID = "acemq:invalid-message-id";
    /** The message used up its attempts ({@link Subscription#maxAttempts()}): poison. */
    public static final String MAX_ATTEMPTS_EXCEEDED = "acemq:max-attempts-exceeded";
    /**
     * A copy arrived with a key the store knows with a different fingerprint, and the subscription rejects such copies
     * ({@link Fingerprint.Action#REJECT}).
     */
    public static final String FINGERPRINT_CONFLICT = "acemq:fingerprint-conflict";
    /**
     * The message does not satisfy its handler's validation (the Spring Boot starter: an {@code @AcemqListener}
     * method's {@code @Valid} payload has constraint violations). A {@link PermanentMessageException} with this
     * condition; the runtime decides it as any permanent failure.
     */
    public static final String VALIDATION_FAILED = "acemq:validation-failed";
    /**
     * The message's handler has an answer but nowhere to send it (the Spring Boot starter: an {@code @AcemqListener}
     * method returned a value, has no {@code @SendTo}, and the message has no reply-to). A
     * {@link PermanentMessageException} with this condition; the runtime decides it as any permanent failure.
     */
    public static final String NO_REPLY_ADDRESS = "acemq:no-reply-address";
    /** The handler declared the failure permanent, without a condition of its own. */
    public static final String PERMANENT_FAILURE = PermanentMessageException.DEFAULT_CONDITION;

    private RejectionConditions() {
    }
}

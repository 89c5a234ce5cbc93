package org.acemq.amqp.consumer;

/** Why a delivery got the outcome it got. A small, fixed set, suitable as a metric tag. */
public enum SettleReason {
    /** The handler succeeded and the store recorded it. */
    PROCESSED,
    /** The store already had the message confirmed: a duplicate, absorbed without running the handler. */
    DUPLICATE,
    /** Another owner holds a live claim on the message; the copy goes back to be tried later. */
    IN_PROGRESS,
    /**
     * The store knows the message's key with a different fingerprint: the same key arrived with other content
     * ({@link Fingerprint}). The handler did not run; the copy is settled as a copy of that key would be, or rejected.
     */
    CONFLICT,
    /** The handler failed with a transient error; the message will be tried again. */
    FAILED,
    /** The handler threw {@link org.acemq.amqp.api.PermanentMessageException} or an exception configured as permanent. */
    PERMANENT,
    /** The message failed more often than the subscription's maximum number of attempts. */
    POISON,
    /** The idempotency store could not be reached; the handler did not run. */
    STORE_UNAVAILABLE,
    /** The message has no usable idempotency key and the policy rejects such messages. */
    MISSING_ID,
    /** The store refused the message's key ({@link org.acemq.amqp.api.InvalidMessageIdException}); nothing paused. */
    INVALID_ID,
    /** The message could not be decoded. */
    UNDECODABLE,
    /**
     * The handler had not started when the consumer began shutting down (the delivery is {@code released}, its claim
     * released). A claimed delivery whose link died while it waited for a handler thread is decided the same way; it
     * cannot be settled on the dead link and is reported {@linkplain ConsumerObserver#abandoned abandoned}.
     */
    SHUTDOWN,
    /**
     * The broker sent the delivery beyond the link credit the consumer had granted (RabbitMQ 3.x does this under load:
     * rabbitmq-server#2597). It is {@code released} the moment it arrives, unread: no store call, no handler, no
     * claim. The broker sends it again later; a release does not count as a delivery attempt.
     */
    BEYOND_CREDIT
}

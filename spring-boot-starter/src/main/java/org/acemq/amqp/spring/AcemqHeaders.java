package org.acemq.amqp.spring;

/**
 * The names under which an {@link AcemqListener} method finds a message's AMQP fields as Spring Messaging headers:
 * {@code @Header(AcemqHeaders.MESSAGE_ID) String messageId}, or in the map of a {@code @Headers Map<String, Object>}
 * parameter, or in the headers of a {@code Message<?>} parameter.
 *
 * <p>The message's application properties are headers under their own names ({@code @Header("orderId")}); the AMQP
 * properties and header fields are headers under the names below, each with the prefix {@code amqp_} (the starter's
 * own values: {@code acemq_}), so that they cannot be taken for an application property. A field the message does
 * not carry is no header. Two names are Spring's own: {@code id} and {@code timestamp} are reserved by Spring's
 * {@code MessageHeaders}, which leaves them out of the headers, so application properties of those names are not
 * headers; an {@link org.acemq.amqp.api.Envelope} parameter reads them
 * ({@code envelope.applicationProperties().get("id")}). Spring's {@code contentType} header is not set either: the
 * parameter's type chooses the conversion, and the AMQP content-type is {@link #CONTENT_TYPE}.
 *
 * <p>The same names set the AMQP fields of a message a listener sends as a Spring {@code Message<?>} (a return value,
 * or {@link AcemqSender}): {@link #SUBJECT}, {@link #CONTENT_TYPE}, {@link #CORRELATION_ID}, {@link #REPLY_TO},
 * {@link #GROUP_ID}, {@link #MESSAGE_ANNOTATIONS}, and three that only an outgoing message has: {@link #DURABLE},
 * {@link #TIME_TO_LIVE} and {@link #PRIORITY}. Every other header with the {@code amqp_} or {@code acemq_} prefix is
 * left out (the message-id of a message a listener sends is always the runtime's stable one); the rest become
 * application properties.
 */
public final class AcemqHeaders {

    /** The prefix of the AMQP fields' header names. */
    public static final String PREFIX = "amqp_";

    /** The AMQP message-id, in its JDK form (String, Long/BigInteger, UUID or byte[]). */
    public static final String MESSAGE_ID = PREFIX + "messageId";
    /** The AMQP correlation-id, in its JDK form. */
    public static final String CORRELATION_ID = PREFIX + "correlationId";
    /** The AMQP subject (a String). */
    public static final String SUBJECT = PREFIX + "subject";
    /** The AMQP content-type (a String), e.g. {@code application/json}. */
    public static final String CONTENT_TYPE = PREFIX + "contentType";
    /** The AMQP reply-to address (a String). */
    public static final String REPLY_TO = PREFIX + "replyTo";
    /** The AMQP group-id (a String): what Artemis message groups and ordered listeners key on. */
    public static final String GROUP_ID = PREFIX + "groupId";
    /** The AMQP creation-time (an {@link java.time.Instant}). */
    public static final String CREATION_TIME = PREFIX + "creationTime";
    /** The address (queue) the message was consumed from (a String). */
    public static final String ADDRESS = PREFIX + "address";
    /** The AMQP header delivery-count (a Long): the earlier deliveries the broker counted as failed. */
    public static final String DELIVERY_COUNT = PREFIX + "deliveryCount";
    /** The AMQP header first-acquirer flag (a Boolean). */
    public static final String FIRST_ACQUIRER = PREFIX + "firstAcquirer";
    /** The message-annotations section (a {@code Map<String, Object>}, symbol keys as strings), if not empty. */
    public static final String MESSAGE_ANNOTATIONS = PREFIX + "messageAnnotations";

    /**
     * Outgoing messages only: whether the broker keeps the message across a restart (a Boolean, or the String
     * {@code true}/{@code false}; default true).
     */
    public static final String DURABLE = PREFIX + "durable";
    /**
     * Outgoing messages only: the time-to-live, a {@link java.time.Duration} or a number of milliseconds (default:
     * none).
     */
    public static final String TIME_TO_LIVE = PREFIX + "timeToLive";
    /** Outgoing messages only: the priority, a number from 0 to 255 (default: the broker's). */
    public static final String PRIORITY = PREFIX + "priority";

    /** The message's idempotency key (a String), as {@link org.acemq.amqp.api.Envelope#id()}. */
    public static final String IDEMPOTENCY_KEY = "acemq_idempotencyKey";
    /** Which attempt at the message this is (an Integer, 1 for the first), as {@link org.acemq.amqp.api.Envelope#attempt()}. */
    public static final String ATTEMPT = "acemq_attempt";

    private AcemqHeaders() {
    }
}

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

    /** The message's idempotency key (a String), as {@link org.acemq.amqp.api.Envelope#id()}. */
    public static final String IDEMPOTENCY_KEY = "acemq_idempotencyKey";
    /** Which attempt at the message this is (an Integer, 1 for the first), as {@link org.acemq.amqp.api.Envelope#attempt()}. */
    public static final String ATTEMPT = "acemq_attempt";

    private AcemqHeaders() {
    }
}

package org.acemq.amqp.api;

import java.time.Instant;
import java.util.Map;

/**
 * One received message as a {@link MessageHandler} sees it: its idempotency key, its body, and the AMQP metadata a
 * handler may need.
 *
 * <p>AMQP-specific value types are converted to plain JDK types: {@code binary} becomes {@code byte[]},
 * {@code symbol} becomes {@link String}, {@code ulong} becomes {@link Long} (or {@link java.math.BigInteger} when it
 * does not fit), {@code uuid} stays {@link java.util.UUID}, {@code timestamp} becomes {@link Instant}; lists and maps
 * are converted element by element. Maps returned here are unmodifiable.
 *
 * <p><b>Threading:</b> an envelope belongs to the handler call it was passed to. It is safe to read from that
 * thread; it must not be retained after the call returns.
 */
public interface Envelope {

    /**
     * @return the idempotency key: derived from the AMQP message-id with a type prefix, so that ids of different
     *     AMQP types never collide (the string {@code "1"}, the ulong {@code 1}, a UUID and binary bytes all give
     *     different keys); or, for messages without a message-id, from whatever the consumer is configured to use
     */
    String id();

    /** @return the AMQP message-id in its JDK form (String, Long/BigInteger, UUID or byte[]), or null if absent */
    Object messageId();

    /** @return the address (queue) the message was consumed from */
    String address();

    /**
     * @return the body: the value of an {@code amqp-value} section (String, Number, Map, List, …), the bytes of a
     *     single {@code data} section as {@code byte[]}, the list of an {@code amqp-sequence}; null when there is no
     *     body
     */
    Object body();

    /**
     * @param type the expected body type
     * @param <T> the expected body type
     * @return the body cast to {@code type}
     * @throws PermanentMessageException (condition {@code amqp:decode-error}) if the body is not of that type;
     *     such a message cannot succeed by retrying
     */
    <T> T body(Class<T> type);

    /** @return the AMQP correlation-id in its JDK form, or null */
    Object correlationId();

    /** @return the AMQP subject, or null */
    String subject();

    /** @return the AMQP content-type, or null */
    String contentType();

    /** @return the AMQP reply-to address, or null */
    String replyTo();

    /** @return the AMQP creation-time, or null */
    Instant creationTime();

    /** @return the application-properties section, empty if absent; never null */
    Map<String, Object> applicationProperties();

    /** @return the message-annotations section with symbol keys as strings, empty if absent; never null */
    Map<String, Object> annotations();

    /**
     * @return the AMQP header delivery-count: how many earlier deliveries of this message the broker counted as
     *     failed. Brokers do not count every failure (a crashed consumer often goes uncounted), so prefer
     *     {@link #attempt()} for retry decisions.
     */
    long deliveryCount();

    /** @return the AMQP header first-acquirer flag (some brokers, Artemis among them, always send false) */
    boolean firstAcquirer();

    /**
     * @return which attempt at this message this is, counted by the idempotency store across consumers, crashes
     *     and releases: 1 for the first
     */
    int attempt();
}

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

    /**
     * @return the AMQP group-id (what Artemis message groups, and subscriptions ordered by group, key on), or null
     */
    default String groupId() {
        return null;
    }

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

    /**
     * Sends a message to {@code address} as part of handling this message. Nothing is sent while the handler runs: the
     * runtime sends what the handler sent only once it returned normally, and only then confirms and accepts this
     * message; a handler that throws sends nothing. What that guarantees depends on the store (README, "Messages the
     * handler sends"): with the JDBC store's transactional handler the messages are written to an outbox in the
     * handler's transaction and dispatched after the commit (exactly once together with the handler's database
     * effects, as seen by an idempotent receiver); with every other store they are sent before the confirm, so a crash
     * in between sends them again, with the same message-ids.
     *
     * <p>The message-id is stable: derived from {@link #id()} and the position of this send among the handler's sends,
     * so a repeated run of the handler sends messages with the same ids.
     *
     * @param address the destination address (a queue or topic name as the broker knows it); not null or empty
     * @param message the message
     * @return the message-id the message carries
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the address is empty, or the body or a property cannot be encoded as AMQP
     * @throws IllegalStateException if called after the handler returned
     * @throws UnsupportedOperationException if this envelope comes from something that cannot send (a test double)
     */
    default String send(String address, OutgoingMessage message) {
        throw new UnsupportedOperationException("this envelope (" + getClass().getName() + ") cannot send messages");
    }

    /**
     * Answers this message: sends {@code message} to its {@link #replyTo() reply-to} address, as
     * {@link #send(String, OutgoingMessage)} does, with the correlation-id request-reply callers expect: the one set on
     * {@code message} if any, else this message's correlation-id if it has one, else its message-id.
     *
     * @param message the answer
     * @return the message-id the answer carries
     * @throws NullPointerException if {@code message} is null
     * @throws IllegalStateException if this message has no reply-to address, or if called after the handler returned
     * @throws UnsupportedOperationException if this envelope comes from something that cannot send (a test double)
     */
    default String reply(OutgoingMessage message) {
        throw new UnsupportedOperationException("this envelope (" + getClass().getName() + ") cannot send messages");
    }
}

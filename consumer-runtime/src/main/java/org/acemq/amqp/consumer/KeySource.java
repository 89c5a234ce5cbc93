package org.acemq.amqp.consumer;

import java.util.Objects;
import java.util.function.Function;
import org.acemq.amqp.api.Envelope;

/**
 * Where a subscription takes each message's idempotency key from: what makes two deliveries "the same message".
 *
 * <ul>
 *   <li>{@link #messageId()} (the default): the AMQP {@code message-id}, with a type prefix ({@code s:}, {@code n:},
 *       {@code u:}, {@code b:}). A message without one is handled by the subscription's {@link MissingIdPolicy}.</li>
 *   <li>{@link #applicationProperty(String)}: a business key the publisher sets as an application property (an order
 *       id, a payment id). A publisher that retries the same business event with a <em>new</em> message-id is then
 *       still absorbed. The key is {@code p:<name>=<typed value>}. A message without the property is rejected with
 *       {@value RejectionConditions#MISSING_MESSAGE_ID}.</li>
 *   <li>{@link #of(String, Function)}: any function of the decoded message (headers, properties, body). It returns
 *       the key's value (a String, number, UUID or bytes; null for "no key"); the key is {@code k:<typed value>}. A
 *       function that returns null, or throws, gets the message rejected with
 *       {@value RejectionConditions#MISSING_MESSAGE_ID}.</li>
 * </ul>
 *
 * <p>Whatever the source, the key is then scoped to the subscription (see {@link Subscription.Builder#scope}) and
 * replaced by {@code h:<sha-256>} where no store could hold it as it is (too long, or holding a NUL character or an
 * unpaired surrogate), as message-ids always were.
 */
public final class KeySource {

    /** The kinds of key source. */
    public enum Kind {
        /** The AMQP message-id. */
        MESSAGE_ID,
        /** An application property. */
        APPLICATION_PROPERTY,
        /** A function of the decoded message. */
        FUNCTION,
        /** The AMQP group-id. */
        GROUP_ID
    }

    private static final KeySource MESSAGE_ID = new KeySource(Kind.MESSAGE_ID, null, null);
    private static final KeySource GROUP_ID = new KeySource(Kind.GROUP_ID, null, null);

    private final Kind kind;
    private final String name;
    private final Function<? super Envelope, ?> function;

    private KeySource(Kind kind, String name, Function<? super Envelope, ?> function) {
        this.kind = kind;
        this.name = name;
        this.function = function;
    }

    /** @return the AMQP message-id (the default) */
    public static KeySource messageId() {
        return MESSAGE_ID;
    }

    /**
     * @return the AMQP {@code group-id} (what Artemis message groups key on): the usual key to order by
     *     ({@link Subscription.Builder#orderBy}); as an idempotency key it is {@code g:<group-id>}
     */
    public static KeySource groupId() {
        return GROUP_ID;
    }

    /**
     * @param name the application property holding the business key
     * @return a source that takes the key from that property
     */
    public static KeySource applicationProperty(String name) {
        return new KeySource(Kind.APPLICATION_PROPERTY, Validation.notBlank("property name", name), null);
    }

    /**
     * @param description what the function reads, for logs and {@link #toString()} (for example
     *     {@code "payload.orderId"})
     * @param function computes the key's value from the decoded message; called once per delivery, before the
     *     claim, on the consumer's intake thread: keep it fast and free of I/O
     * @return a source that takes the key from the function
     */
    public static KeySource of(String description, Function<? super Envelope, ?> function) {
        return new KeySource(Kind.FUNCTION, Validation.notBlank("description", description),
                Objects.requireNonNull(function, "function must not be null"));
    }

    /** @return the kind of source */
    public Kind kind() {
        return kind;
    }

    /**
     * @return the property name for {@link Kind#APPLICATION_PROPERTY}, the description for {@link Kind#FUNCTION},
     *     null for {@link Kind#MESSAGE_ID} and {@link Kind#GROUP_ID}
     */
    public String name() {
        return name;
    }

    /** @return the function for {@link Kind#FUNCTION}, otherwise null */
    public Function<? super Envelope, ?> function() {
        return function;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KeySource other && kind == other.kind && Objects.equals(name, other.name)
                && Objects.equals(function, other.function);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, name);
    }

    @Override
    public String toString() {
        return switch (kind) {
            case MESSAGE_ID -> "messageId";
            case APPLICATION_PROPERTY -> "applicationProperty(" + name + ")";
            case FUNCTION -> "function(" + name + ")";
            case GROUP_ID -> "groupId";
        };
    }
}

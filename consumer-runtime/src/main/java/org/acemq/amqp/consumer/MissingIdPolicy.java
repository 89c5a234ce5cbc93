package org.acemq.amqp.consumer;

import java.util.Objects;

/**
 * How a subscription derives an idempotency key for a message that carries no AMQP message-id.
 *
 * <ul>
 *   <li>{@link #reject()} (the default): the message is rejected with condition {@value #MISSING_ID_CONDITION}; it
 *       is dead-lettered by brokers that do that. Nothing is processed without de-duplication.</li>
 *   <li>{@link #applicationProperty(String)}: the key comes from an application property the publisher sets (a
 *       business key such as an order number). A message lacking that property too is rejected as above.</li>
 *   <li>{@link #bodyHash()}: the key is the SHA-256 of the body, over the same bytes as a {@link Fingerprint} (a body
 *       of bytes or text as those bytes, any other body as a canonical form of its typed values), so every decode and
 *       every redelivery of one message, and a re-publish of the same content, have the same key. Two different
 *       messages with identical bodies are then treated as duplicates of each other; choose this only where that is
 *       true.</li>
 * </ul>
 */
public final class MissingIdPolicy {

    /** The AMQP error condition of a rejection for a missing key. */
    public static final String MISSING_ID_CONDITION = RejectionConditions.MISSING_MESSAGE_ID;

    /** The kinds of policy. */
    public enum Kind {
        /** Reject messages without a message-id. */
        REJECT,
        /** Use an application property as the key. */
        APPLICATION_PROPERTY,
        /** Use a hash of the body as the key. */
        BODY_HASH
    }

    private static final MissingIdPolicy REJECT = new MissingIdPolicy(Kind.REJECT, null);
    private static final MissingIdPolicy BODY_HASH = new MissingIdPolicy(Kind.BODY_HASH, null);

    private final Kind kind;
    private final String property;

    private MissingIdPolicy(Kind kind, String property) {
        this.kind = kind;
        this.property = property;
    }

    /** @return the policy that rejects messages without a message-id (the default) */
    public static MissingIdPolicy reject() {
        return REJECT;
    }

    /**
     * @param name the application property that carries the key
     * @return the policy that takes the key from that property
     */
    public static MissingIdPolicy applicationProperty(String name) {
        return new MissingIdPolicy(Kind.APPLICATION_PROPERTY, Validation.notBlank("property name", name));
    }

    /** @return the policy that hashes the body */
    public static MissingIdPolicy bodyHash() {
        return BODY_HASH;
    }

    /** @return the kind of policy */
    public Kind kind() {
        return kind;
    }

    /** @return the application property name for {@link Kind#APPLICATION_PROPERTY}, otherwise null */
    public String property() {
        return property;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MissingIdPolicy other && kind == other.kind && Objects.equals(property, other.property);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, property);
    }

    @Override
    public String toString() {
        return property == null ? kind.name() : kind + "(" + property + ")";
    }
}

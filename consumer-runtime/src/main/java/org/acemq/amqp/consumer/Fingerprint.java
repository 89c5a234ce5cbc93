package org.acemq.amqp.consumer;

import java.util.List;
import java.util.Objects;

/**
 * Whether a subscription tells a true duplicate (same key, same content) from a copy that differs (same key, other
 * content), and what it does with the second kind.
 *
 * <p>With a fingerprint on (the default, {@link #body()}), the runtime hashes each message's body, and the application
 * properties named with {@link #withProperties}, and the store records that hash with the claim (for stores that
 * {@linkplain org.acemq.amqp.api.LeasedIdempotencyStore#recordsFingerprints() record fingerprints}: both stores shipped
 * with AceMQ do). When a key that is already confirmed, or claimed by another consumer, arrives with a different
 * fingerprint, it is a <em>conflict</em>: the same key was used for different content (a publisher bug, or a business
 * key that is not unique). The copy is then never silently accepted:
 * <ul>
 *   <li>{@link Action#ACCEPT} (the default): it is settled as a copy of that key would be ({@code accepted} when the
 *       key is confirmed, {@code released} after the in-progress delay when it is claimed), its handler does not run,
 *       it is counted with reason {@link SettleReason#CONFLICT}, one WARN names the key and both fingerprints, and the
 *       observer's {@link ConsumerObserver#conflict conflict} event fires;</li>
 *   <li>{@link Action#REJECT}: as above, but it is {@code rejected} with condition
 *       {@value RejectionConditions#FINGERPRINT_CONFLICT} (dead-lettered where the broker does that).</li>
 * </ul>
 * {@link #off()} turns the check off: a copy with the key of a confirmed message is a duplicate whatever it holds.
 *
 * <p>The hash is the first 128 bits of SHA-256, 32 hexadecimal digits, over the body and then, for each named property
 * in the order given, its name and typed value. The body counts as bytes when it is bytes or text (one {@code data}
 * section as it is, one {@code amqp-value} string or symbol as UTF-8, one {@code amqp-value} binary as its bytes, no
 * body as no bytes: the same as before structured bodies had a form of their own), and otherwise as a canonical form
 * of its AMQP values read from the message's encoding: each body section's kind, then every value with its AMQP type,
 * whichever encoding the sender chose, map entries in their order. The fingerprint is therefore a function of the
 * message: every decode of it, a redelivery, and a re-publish of the same content by any client give the same
 * fingerprint, and content that differs in any value or type gives another one. The message-id, header, properties,
 * annotations and the number of frames the message took are not part of it (README, "What counts as a duplicate").
 */
public final class Fingerprint {

    /** What to do with a copy whose key is known with another fingerprint. */
    public enum Action {
        /** Settle it as a copy of that key (never run), count it as a conflict, log a WARN. */
        ACCEPT,
        /** Reject it with {@value RejectionConditions#FINGERPRINT_CONFLICT}. */
        REJECT
    }

    private static final Fingerprint OFF = new Fingerprint(false, List.of(), Action.ACCEPT);
    private static final Fingerprint BODY = new Fingerprint(true, List.of(), Action.ACCEPT);

    private final boolean enabled;
    private final List<String> properties;
    private final Action onConflict;

    private Fingerprint(boolean enabled, List<String> properties, Action onConflict) {
        this.enabled = enabled;
        this.properties = properties;
        this.onConflict = onConflict;
    }

    /** @return the default: the body's hash, conflicts settled as copies and counted */
    public static Fingerprint body() {
        return BODY;
    }

    /** @return no fingerprint: a key seen before is a duplicate whatever the copy holds */
    public static Fingerprint off() {
        return OFF;
    }

    /**
     * @param names application properties whose values are part of the fingerprint, beside the body
     * @return this fingerprint with those properties
     */
    public Fingerprint withProperties(String... names) {
        requireEnabled();
        String[] copy = names.clone();
        for (String n : copy) {
            Validation.notBlank("fingerprint property", n);
        }
        return new Fingerprint(true, List.of(copy), onConflict);
    }

    /**
     * @param action what to do with a conflicting copy
     * @return this fingerprint with that action
     */
    public Fingerprint onConflict(Action action) {
        requireEnabled();
        return new Fingerprint(true, properties, Objects.requireNonNull(action, "action must not be null"));
    }

    private void requireEnabled() {
        if (!enabled) {
            throw new IllegalStateException("Fingerprint.off() takes no properties or conflict action");
        }
    }

    /** @return whether fingerprints are computed and compared */
    public boolean enabled() {
        return enabled;
    }

    /** @return the application properties hashed beside the body, in order */
    public List<String> properties() {
        return properties;
    }

    /** @return what to do with a conflicting copy */
    public Action conflictAction() {
        return onConflict;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Fingerprint other && enabled == other.enabled && properties.equals(other.properties)
                && onConflict == other.onConflict;
    }

    @Override
    public int hashCode() {
        return Objects.hash(enabled, properties, onConflict);
    }

    @Override
    public String toString() {
        if (!enabled) {
            return "off";
        }
        return "body" + (properties.isEmpty() ? "" : "+" + properties) + ", on conflict " + onConflict;
    }
}

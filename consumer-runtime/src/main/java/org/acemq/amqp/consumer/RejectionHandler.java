package org.acemq.amqp.consumer;

import java.util.Objects;
import java.util.Optional;
import org.acemq.amqp.api.Envelope;

/**
 * Consulted when a delivery is about to be {@linkplain Outcome#REJECTED rejected}, so that the application can take it
 * over instead of leaving it to the broker's dead-letter handling: for example publish it, with the exception's class
 * and message, to a parking queue of its choice and then have it accepted. Set it per subscription with
 * {@link Subscription.Builder#rejectionHandler(RejectionHandler)}; a subscription without one rejects as it always
 * does.
 *
 * <p><b>When it is called:</b> for every rejection the runtime decides, whatever the reason: a permanent failure
 * ({@link SettleReason#PERMANENT}: {@link org.acemq.amqp.api.PermanentMessageException}, a type declared permanent, a
 * body a listener cannot convert or validate), a poison message ({@link SettleReason#POISON}: it failed on the attempt
 * that reaches {@code maxAttempts}, or arrived already past it), a message that cannot be decoded
 * ({@link SettleReason#UNDECODABLE}), one without a usable key ({@link SettleReason#MISSING_ID},
 * {@link SettleReason#INVALID_ID}) and a fingerprint conflict the subscription rejects ({@link SettleReason#CONFLICT}).
 * Look at {@link Rejection#reason()} to act on some of them only and answer {@link Decision#REJECT} for the rest. It is
 * never called for a delivery that is released, modified or accepted anyway, nor while the consumer only releases
 * what it holds at shutdown.
 *
 * <p><b>What its answer does</b> (the README's outcome table has the rows):
 * <ul>
 *   <li>{@link Decision#REJECT}: the rejection proceeds exactly as without a handler (condition and description
 *       unchanged).</li>
 *   <li>{@link Decision#ACCEPT}: the delivery is {@code accepted} instead. Its reason stays the rejection's (a poison
 *       message taken over is counted {@code accepted}/{@code poison}), and a claim it holds is <em>confirmed</em>, as
 *       for a processed message: the message is done, so a later copy of it is absorbed as a duplicate and not handed
 *       to this handler again. Accept only once the message is safe elsewhere: after an accept the broker forgets
 *       it.</li>
 *   <li>It throws (or returns null): the original rejection proceeds, as with {@link Decision#REJECT}, and the
 *       failure is logged as an ERROR with the message's key. The message is never accepted unless the handler said
 *       so; where the broker dead-letters rejected messages it is not lost.</li>
 * </ul>
 *
 * <p><b>Threading:</b> called synchronously on the runtime thread that decided the rejection (a handler thread of the
 * subscription, which also takes new deliveries from the link for the others), concurrently for different deliveries
 * when {@code concurrency > 1}. It may block (to publish elsewhere) but holds that thread and the delivery's credit
 * meanwhile, and the claim's lease is not renewed while it runs: keep it well within the store's lease. It must be
 * thread-safe.
 */
@FunctionalInterface
public interface RejectionHandler {

    /**
     * @param rejection the delivery about to be rejected and why
     * @return {@link Decision#ACCEPT} to have the delivery accepted, {@link Decision#REJECT} to let the rejection
     *     proceed
     * @throws Exception to let the rejection proceed (logged)
     */
    Decision onRejection(Rejection rejection) throws Exception;

    /** What a {@link RejectionHandler} decides. */
    enum Decision {
        /** The application has taken the message over: settle it {@code accepted}, its claim confirmed. */
        ACCEPT,
        /** Let the rejection proceed as decided. */
        REJECT
    }

    /**
     * A delivery about to be rejected: what is known about it and why it is rejected. Immutable.
     */
    final class Rejection {

        private final String subscription;
        private final SettleReason reason;
        private final String condition;
        private final String description;
        private final Envelope envelope;
        private final Throwable failure;

        /**
         * @param subscription the subscription's name
         * @param reason why the delivery is rejected
         * @param condition the AMQP error condition the rejection carries, e.g. {@code acemq:max-attempts-exceeded}
         * @param description the rejection's description as it would go to the broker
         * @param envelope the message, or null when it cannot be decoded or has no key
         * @param failure what the handler threw, or null when the rejection comes from no exception
         */
        public Rejection(String subscription, SettleReason reason, String condition, String description,
                Envelope envelope, Throwable failure) {
            this.subscription = Objects.requireNonNull(subscription, "subscription");
            this.reason = Objects.requireNonNull(reason, "reason");
            this.condition = Objects.requireNonNull(condition, "condition");
            this.description = description;
            this.envelope = envelope;
            this.failure = failure;
        }

        /** @return the name of the subscription that received the delivery */
        public String subscription() {
            return subscription;
        }

        /** @return why it is rejected: {@link SettleReason#PERMANENT}, {@link SettleReason#POISON}, ... */
        public SettleReason reason() {
            return reason;
        }

        /**
         * @return the AMQP error condition the rejection carries: {@code acemq:permanent-failure} (or a
         *     {@link org.acemq.amqp.api.PermanentMessageException}'s own), {@code acemq:max-attempts-exceeded},
         *     {@code amqp:decode-error}, ... (see {@link RejectionConditions})
         */
        public String condition() {
            return condition;
        }

        /** @return the description the rejection sends to the broker, if any */
        public Optional<String> description() {
            return Optional.ofNullable(description);
        }

        /**
         * @return the message as the handler receives it (body, properties, id, attempt); empty when the message
         *     cannot be decoded or has no key ({@link SettleReason#UNDECODABLE}, {@link SettleReason#MISSING_ID})
         */
        public Optional<Envelope> envelope() {
            return Optional.ofNullable(envelope);
        }

        /**
         * @return what the handler threw on its last attempt ({@link SettleReason#PERMANENT}, and
         *     {@link SettleReason#POISON} when the last attempt failed here); empty when the rejection comes from no
         *     exception (a message that arrived past {@code maxAttempts}, an undecodable one, a missing key, a
         *     conflict)
         */
        public Optional<Throwable> failure() {
            return Optional.ofNullable(failure);
        }

        @Override
        public String toString() {
            return "Rejection[" + subscription + ", " + reason + ", " + condition + "]";
        }
    }
}

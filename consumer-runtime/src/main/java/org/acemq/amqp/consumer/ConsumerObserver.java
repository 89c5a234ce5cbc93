package org.acemq.amqp.consumer;

import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

/**
 * Receives what a running consumer does, for metrics, tracing or logging. The Micrometer binding is one
 * implementation; every method has an empty default so an implementation overrides
 * only what it needs.
 *
 * <p><b>Threading:</b> methods are called synchronously on the runtime's handler, control and scheduler threads,
 * concurrently. They must be thread-safe, fast and must not throw (an exception is logged and otherwise ignored). The
 * {@code subscription} argument is the subscription's {@linkplain Subscription#name() name}, a bounded value fit for a
 * metric tag; message ids are never passed.
 */
public interface ConsumerObserver {

    /** An observer that does nothing. */
    ConsumerObserver NOOP = new ConsumerObserver() {
    };

    /**
     * A delivery's key was looked up in the store and the store answered.
     *
     * @param subscription the subscription name
     * @param result what the store answered (the store API's own {@link ClaimResult})
     */
    default void claim(String subscription, ClaimResult result) {
    }

    /**
     * A delivery's key was looked up in the store and the store did not answer: it failed (it is down, as far as the
     * call can tell) or it refused that key ({@link org.acemq.amqp.api.InvalidMessageIdException}). The delivery's
     * outcome says which ({@link SettleReason#STORE_UNAVAILABLE} or {@link SettleReason#INVALID_ID}).
     *
     * @param subscription the subscription name
     */
    default void claimFailed(String subscription) {
    }

    /**
     * A delivery was settled with the broker (for transactional acknowledgement: after the commit succeeded).
     *
     * @param subscription the subscription name
     * @param outcome the AMQP outcome
     * @param reason why
     */
    default void settled(String subscription, Outcome outcome, SettleReason reason) {
    }

    /**
     * The same event with the message's store key, for observers that follow single messages (an audit of what was
     * dead-lettered, a test that acts on one message). The runtime calls this method; its default calls
     * {@link #settled(String, Outcome, SettleReason)}, so an observer overrides one or the other. It runs on whichever
     * runtime thread settles the delivery (settlements of a batch are sent together), not necessarily the thread that
     * ran its handler.
     *
     * @param subscription the subscription name
     * @param messageKey the message's key in the idempotency store: its scope, {@code |}, and the key within the
     *     scope (the message-id with its type prefix, e.g. {@code orders|s:order-42}, as the README's "What counts as
     *     a duplicate" section says, or the key the subscription's key source or missing-id policy derived); {@code null} when the message had none (undecodable, or no id and the policy
     *     rejects it) or was never read ({@link SettleReason#BEYOND_CREDIT}). Raw: escape it before logging.
     * @param outcome the AMQP outcome
     * @param reason why
     */
    default void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
        settled(subscription, outcome, reason);
    }

    /**
     * A delivery's key is known to the store with a different fingerprint: the same key arrived with other content
     * (see {@link Fingerprint}). Called once per such delivery, before it is settled (with reason
     * {@link SettleReason#CONFLICT}).
     *
     * @param subscription the subscription name
     * @param messageKey the store key; raw: escape it before logging
     * @param recordedFingerprint the fingerprint the store holds for the key
     * @param fingerprint this copy's fingerprint
     */
    default void conflict(String subscription, String messageKey, String recordedFingerprint, String fingerprint) {
    }

    /**
     * A delivery was not settled by this consumer because its link or connection died before the outcome was known
     * (or, in transactional mode, because its transaction rolled back). The broker will redeliver it; the store will
     * recognise the copy.
     *
     * @param subscription the subscription name
     */
    default void abandoned(String subscription) {
    }

    /**
     * A delivery already reported {@link #settled(String, String, Outcome, SettleReason) settled} did not get its
     * disposition after all: the outcome was handed to the connection's I/O thread, and the connection failed before
     * that thread came to write it (a busy I/O thread can hold dispositions for seconds). The broker redelivers the
     * message on the new connection, where the store recognises the copy. Always called after the delivery's
     * {@code settled}, on a runtime thread, and never for transactional acknowledgement (whose outcomes count only
     * once committed).
     *
     * @param subscription the subscription name
     */
    default void dispositionDropped(String subscription) {
    }

    /**
     * A handler returned or threw.
     *
     * @param subscription the subscription name
     * @param nanos how long it ran
     * @param success whether it returned normally
     */
    default void handled(String subscription, long nanos, boolean success) {
    }

    /**
     * A handler is about to run, on the calling worker thread: the place to start a span or an Observation and make
     * it current. The runtime calls {@link HandlerScope#close} on the same thread once the delivery's outcome is
     * decided (after the handler returned or threw, the store was updated and the outcome was sent or scheduled),
     * in every case. Called only when the handler runs (not for duplicates, in-progress copies or undecodable
     * messages).
     *
     * @param subscription the subscription name
     * @param address the address consumed
     * @param applicationProperties the message's application properties (read-only; the carrier of W3C
     *     {@code traceparent}/{@code tracestate})
     * @return the scope to close afterwards; {@code null} for none (the default)
     */
    default HandlerScope handlerStarting(String subscription, String address,
                                         Map<String, Object> applicationProperties) {
        return null;
    }

    /**
     * The same event with the whole message, for observers that follow the OpenTelemetry messaging conventions (its
     * id, correlation-id and attempt; trace context in its message-annotations or application properties). The runtime
     * calls this method; its default calls {@link #handlerStarting(String, String, Map)} with the envelope's address
     * and application properties, so an observer overrides one or the other.
     *
     * @param subscription the subscription name
     * @param envelope the message about to be handled (the same instance the handler receives; read-only)
     * @param brokerProduct the {@code product} the broker announced when the connection opened (for example
     *     {@code apache-activemq-artemis}, {@code RabbitMQ}), or null if it announced none
     * @return the scope to close afterwards; {@code null} for none (the default)
     */
    default HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        return handlerStarting(subscription, envelope.address(), envelope.applicationProperties());
    }

    /**
     * What {@link #handlerStarting} opened. Both methods are called on the worker thread that ran the handler and
     * must not throw (an exception is logged and otherwise ignored).
     */
    interface HandlerScope {

        /**
         * The handler threw (called before {@link #close}, at most once).
         *
         * @param error what it threw
         */
        default void failed(Throwable error) {
        }

        /**
         * The delivery's fate is decided; end the scope. Called exactly once.
         *
         * @param outcome the outcome sent, enlisted or scheduled (for at-most-once subscriptions: what was reported,
         *     usually {@code ACCEPTED}); null if the delivery was abandoned (its link or connection died, so nothing
         * was settled)
         */
        void close(Outcome outcome);

        /**
         * The delivery's fate is decided, with the reason. The runtime calls this method; its default calls
         * {@link #close(Outcome)}, so a scope overrides one or the other. Called exactly once.
         *
         * @param outcome as for {@link #close(Outcome)}; null if the delivery was abandoned
         * @param reason why (for example {@link SettleReason#PROCESSED}, {@link SettleReason#FAILED}); null if the
         *     delivery was abandoned
         */
        default void close(Outcome outcome, SettleReason reason) {
            close(outcome);
        }
    }

    /**
     * A store call finished.
     *
     * @param operation which call
     * @param nanos how long it took
     * @param success whether it succeeded (a fenced no-op counts as success)
     */
    default void storeCall(StoreOperation operation, long nanos, boolean success) {
    }

    /**
     * A store call finished, with the number of message keys it covered. The runtime calls this method; its default
     * calls {@link #storeCall(StoreOperation, long, boolean)}, so an observer overrides one or the other. A batched
     * call ({@code acquireAll}, {@code confirmAll}, {@code releaseAll} of a
     * {@link org.acemq.amqp.api.LeasedIdempotencyStore}) covers many keys; a single call, a renewal and a probe cover
     * one. Divide the time by {@code keys} for the store time per message.
     *
     * @param operation which call
     * @param nanos how long it took
     * @param success whether it succeeded (a fenced no-op counts as success)
     * @param keys how many keys the call covered, at least 1
     */
    default void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        storeCall(operation, nanos, success);
    }

    /**
     * A message a handler sent was sent to the broker and the broker settled it, or the send failed. Called once per
     * message and attempt, on the thread that sent it (a handler thread for {@link SendPath#DIRECT} and
     * {@link SendPath#OUTBOX}, a scheduler thread for {@link SendPath#SWEEP}, the settling thread for
     * {@link SendPath#TRANSACTION}). A message whose send failed stays to be sent again: by the handler's next run
     * ({@code DIRECT}, {@code TRANSACTION}), or from the store's outbox ({@code OUTBOX}, {@code SWEEP}), so one
     * message may be reported more than once.
     *
     * @param path how it was sent
     * @param result whether the broker accepted it, refused it, or the send failed for a reason that may pass
     * @param nanos from the start of the send until its outcome was known (for several messages sent together, each is
     *     counted from the start of the batch)
     */
    default void sent(SendPath path, SendResult result, long nanos) {
    }

    /**
     * The consumer ran a handler without a claim because the store was down and the policy is
     * {@link StoreFailurePolicy#FAIL_OPEN}.
     *
     * @param subscription the subscription name
     */
    default void storeBypassed(String subscription) {
    }

    /**
     * The consumer stopped (true) or resumed (false) granting credit because the store became unreachable or
     * reachable again.
     *
     * @param paused the new state
     */
    default void paused(boolean paused) {
    }

    /**
     * The connection to the broker was lost (true) or re-established (false). Called once per loss, not for every
     * failed reconnect attempt; a loss may be followed by no {@code false} when reconnecting gives up (the consumer's
     * state is then {@link ConsumerHealth.State#FAILED}).
     *
     * @param interrupted the new state
     */
    default void connectionInterrupted(boolean interrupted) {
    }
}

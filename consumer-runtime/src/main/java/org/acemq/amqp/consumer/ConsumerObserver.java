package org.acemq.amqp.consumer;

/**
 * Receives what a running consumer does, for metrics, tracing or logging. The Micrometer binding is one
 * implementation; every method has an empty default so an implementation overrides
 * only what it needs.
 *
 * <p><b>Threading:</b> methods are called synchronously on the runtime's worker and dispatcher threads, concurrently.
 * They must be thread-safe, fast and must not throw (an exception is logged and otherwise ignored). The
 * {@code subscription} argument is the subscription's {@linkplain Subscription#name() name}, a bounded value fit
 * for a metric tag; message ids are never passed.
 */
public interface ConsumerObserver {

    /** An observer that does nothing. */
    ConsumerObserver NOOP = new ConsumerObserver() {
    };

    /**
     * A delivery's key was looked up in the store.
     *
     * @param subscription the subscription name
     * @param status what the store answered
     */
    default void claim(String subscription, ClaimStatus status) {
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
     * A delivery was not settled by this consumer because its link or connection died before the outcome was known
     * (or, in transactional mode, because its transaction rolled back). The broker will redeliver it; the store will
     * recognise the copy.
     *
     * @param subscription the subscription name
     */
    default void abandoned(String subscription) {
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
     * A store call finished.
     *
     * @param operation which call
     * @param nanos how long it took
     * @param success whether it succeeded (a fenced no-op counts as success)
     */
    default void storeCall(StoreOperation operation, long nanos, boolean success) {
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

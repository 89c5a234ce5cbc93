package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.Subscription;

/**
 * What a failed handler call turns into, for {@link OutcomePolicy}: a transient failure's outcome and how long the
 * delivery is held before it goes back (the retry back-off), and the condition and description a permanent failure is
 * rejected with. Pure: the back-off jitter is drawn by the caller.
 */
final class FailureOutcomes {

    private final Outcome explicitTransientOutcome;
    private final RetryBackoff backoff;

    FailureOutcomes(Subscription subscription) {
        this.explicitTransientOutcome = subscription.transientFailureOutcome().orElse(null);
        this.backoff = subscription.retryBackoff();
    }

    /**
     * @param modifiedSupported whether the broker implements {@code modified}
     * @return the outcome of a transient failure: the subscription's explicit choice, else {@code modified} where the
     *     broker implements it and {@code released} where it does not
     */
    Outcome transientOutcome(boolean modifiedSupported) {
        if (explicitTransientOutcome != null) {
            return explicitTransientOutcome;
        }
        return modifiedSupported ? Outcome.MODIFIED : Outcome.RELEASED;
    }

    /**
     * @param attempt the attempt that failed (1 for the first)
     * @param draw a number in [0, 1)
     * @return how long to hold the delivery before it goes back
     */
    Duration retryDelay(int attempt, double draw) {
        if (!backoff.enabled()) {
            return Duration.ZERO;
        }
        double nanos = backoff.first().toNanos() * Math.pow(backoff.multiplier(), Math.max(0, attempt - 1));
        double capped = Math.min(nanos, backoff.max().toNanos());
        double jittered = capped * (1.0 - backoff.jitter() * Math.min(Math.max(draw, 0.0), 1.0));
        return Duration.ofNanos((long) jittered);
    }

    /** @return the rejection condition of a permanent failure: its own if it is a {@link PermanentMessageException} */
    static String permanentCondition(Throwable failure) {
        return failure instanceof PermanentMessageException p ? p.condition() : RejectionConditions.PERMANENT_FAILURE;
    }

    /**
     * A {@link PermanentMessageException}'s description goes to the broker as given (its documented contract); other
     * permanent failure types are described by class and message.
     */
    static String permanentDescription(Throwable failure) {
        if (failure instanceof PermanentMessageException && failure.getMessage() != null) {
            return failure.getMessage();
        }
        return Errors.describe(failure);
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

/**
 * What {@link OutcomePolicy} decided for one delivery: go on to the next step, or settle it with this outcome (after
 * {@code delay}). Settling never decides anything: it sends what the verdict says.
 *
 * @param action what to do next
 * @param outcome the AMQP outcome (SETTLE only)
 * @param reason why (SETTLE only)
 * @param condition the rejection condition (REJECTED only)
 * @param description the rejection description (REJECTED only), at most {@link #MAX_DESCRIPTION} characters
 * @param delay how long to hold the delivery before settling it (zero: at once)
 */
record Verdict(Action action, Outcome outcome, SettleReason reason, String condition, String description,
               Duration delay) {

    /** The longest rejection description sent to the broker. */
    static final int MAX_DESCRIPTION = 512;

    static final Verdict CLAIM = new Verdict(Action.CLAIM, null, null, null, null, Duration.ZERO);
    static final Verdict RUN = new Verdict(Action.RUN, null, null, null, null, Duration.ZERO);
    static final Verdict PROCESSED = settle(Outcome.ACCEPTED, SettleReason.PROCESSED);
    static final Verdict DUPLICATE = settle(Outcome.ACCEPTED, SettleReason.DUPLICATE);

    /** The next step. */
    enum Action {
        /** Ask the store for the key. */
        CLAIM,
        /** Run the handler (with the claim, or without one when the store is down and the policy is FAIL_OPEN). */
        RUN,
        /** Settle with {@link #outcome()}. */
        SETTLE,
        /**
         * Run it again in place after {@link #delay()} (an ordered subscription's transient failure): its claim is
         * released, and its key's later deliveries wait; if the subscription stops meanwhile it is settled with
         * {@link #outcome()}.
         */
        RETRY
    }

    /** Bounds the description. */
    Verdict {
        if (description != null && description.length() > MAX_DESCRIPTION) {
            description = description.substring(0, MAX_DESCRIPTION - 3) + "...";
        }
    }

    static Verdict settle(Outcome outcome, SettleReason reason) {
        return new Verdict(Action.SETTLE, outcome, reason, null, null, Duration.ZERO);
    }

    static Verdict later(Outcome outcome, SettleReason reason, Duration delay) {
        return new Verdict(Action.SETTLE, outcome, reason, null, null, delay);
    }

    static Verdict retry(Outcome ifStopping, Duration delay) {
        return new Verdict(Action.RETRY, ifStopping, SettleReason.FAILED, null, null, delay);
    }

    static Verdict reject(SettleReason reason, String condition, String description) {
        return new Verdict(Action.SETTLE, Outcome.REJECTED, reason, condition, description, Duration.ZERO);
    }

    /** @return this verdict, to be settled at once */
    Verdict withoutDelay() {
        return delay.isZero() ? this : new Verdict(action, outcome, reason, condition, description, Duration.ZERO);
    }

    /** @return whether the delivery is to be settled now or after the delay */
    boolean settles() {
        return action == Action.SETTLE;
    }

    /** @return whether the delivery's processing ends here: settled, or run again in place after its delay */
    boolean ends() {
        return action == Action.SETTLE || action == Action.RETRY;
    }
}

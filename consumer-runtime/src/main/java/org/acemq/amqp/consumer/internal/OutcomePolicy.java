package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.Subscription;

/**
 * Every rule that decides a delivery's fate, as one pure function of its {@link DeliveryFacts} and the subscription's
 * settings: no I/O, no clock, no randomness of its own (the back-off jitter is drawn by the caller and passed in). The
 * README's outcome table lists the same rules; {@code OutcomePolicyTest} checks each of its rows against this class and
 * keeps the README and this class in agreement. Besides {@link #decide}, which walks a delivery from receipt to its
 * outcome, the decisions taken around it live here too: how a claim ends ({@link #confirms}), what a lost confirm
 * gives ({@link #confirmNotRecorded}), an unexpected failure ({@link #unexpectedFailure}), a hold while stopping
 * ({@link #whenSent}), an outcome without a transaction ({@link #withoutTransaction}), what the application's
 * rejection handler's answer makes of a rejection ({@link #consults}, {@link #afterRejectionHandler}) and the
 * deliveries left at shutdown ({@link #handlesLeftAtShutdown}). The callers carry them out and decide nothing.
 */
final class OutcomePolicy {

    private static final Verdict UNEXPECTED_FAILURE = Verdict.settle(Outcome.RELEASED, SettleReason.FAILED);
    private static final Verdict BEYOND_CREDIT = Verdict.settle(Outcome.RELEASED, SettleReason.BEYOND_CREDIT);

    private final AcknowledgementMode mode;
    private final int maxAttempts;
    private final Subscription subscription;
    private final FailureOutcomes failures;
    private final Duration inProgressDelay;
    private final MissingIdPolicy missingIdPolicy;
    private final boolean failOpen;
    private final boolean rejectConflicts;
    private final boolean rejectionHandler;

    OutcomePolicy(Subscription subscription, StoreFailurePolicy storeFailurePolicy) {
        this.subscription = subscription;
        this.mode = subscription.acknowledgementMode();
        this.maxAttempts = subscription.maxAttempts();
        this.failures = new FailureOutcomes(subscription);
        this.inProgressDelay = subscription.inProgressDelay();
        this.missingIdPolicy = subscription.missingIdPolicy();
        this.failOpen = storeFailurePolicy == StoreFailurePolicy.FAIL_OPEN;
        this.rejectConflicts = subscription.fingerprint().conflictAction() == Fingerprint.Action.REJECT;
        this.rejectionHandler = subscription.rejectionHandler().isPresent();
    }

    /**
     * @param facts what is known about the delivery
     * @return the next step, or how to settle it
     */
    Verdict decide(DeliveryFacts facts) {
        return switch (facts.stage()) {
            case RECEIVED -> received(facts);
            case CLAIMED -> claimed(facts);
            case HANDLED -> handled(facts);
        };
    }

    private Verdict received(DeliveryFacts f) {
        boolean atMostOnce = mode == AcknowledgementMode.AT_MOST_ONCE;
        if (f.stopping() && !atMostOnce) {
            // not started: it goes back uncounted. At-most-once deliveries cannot go back: they are handled.
            return Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN);
        }
        if (f.decodeError() != null) {
            return Verdict.reject(SettleReason.UNDECODABLE, RejectionConditions.DECODE_ERROR,
                    "message cannot be decoded: " + f.decodeError());
        }
        if (!f.hasKey()) {
            return Verdict.reject(SettleReason.MISSING_ID, RejectionConditions.MISSING_MESSAGE_ID,
                    "message has no message-id" + (missingIdPolicy.kind() == MissingIdPolicy.Kind.APPLICATION_PROPERTY
                            ? " and no '" + missingIdPolicy.property() + "' application property" : ""));
        }
        if (f.storeDown() && !atMostOnce && !failOpen) {
            return Verdict.settle(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE);
        }
        return Verdict.CLAIM;
    }

    private Verdict claimed(DeliveryFacts f) {
        boolean atMostOnce = mode == AcknowledgementMode.AT_MOST_ONCE;
        if (!atMostOnce && (f.stopping() || f.linkGone())) {
            // claimed, not started (it waited for a handler thread): it goes back uncounted, its claim released. On a
            // dead link nothing can be sent: the settlement reports it abandoned and the broker redelivers it.
            return Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN);
        }
        if (f.conflict()) {
            // the same key with other content: never run, never silently taken for a duplicate
            if (rejectConflicts) {
                return Verdict.reject(SettleReason.CONFLICT, RejectionConditions.FINGERPRINT_CONFLICT,
                        "the idempotency store holds this message's key with a different fingerprint (the same key"
                                + " with other content)");
            }
            if (f.claim() == ClaimResult.IN_PROGRESS && !atMostOnce) {
                return Verdict.later(Outcome.RELEASED, SettleReason.CONFLICT, inProgressDelay);
            }
            return Verdict.settle(Outcome.ACCEPTED, SettleReason.CONFLICT);
        }
        if (f.claim() == null) {
            if (f.storeError() == null) {
                throw new IllegalArgumentException("a CLAIMED stage needs the store's answer or its error");
            }
            if (f.keyRefused()) {
                return Verdict.reject(SettleReason.INVALID_ID, RejectionConditions.INVALID_MESSAGE_ID,
                        "the idempotency store refused the message's key: " + f.storeError());
            }
            // the store is down as far as this call can tell
            return failOpen ? Verdict.RUN
                    : Verdict.settle(atMostOnce ? Outcome.ACCEPTED : Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE);
        }
        return switch (f.claim()) {
            case CLAIMED -> !atMostOnce && f.attempt() > maxAttempts
                    ? Verdict.reject(SettleReason.POISON, RejectionConditions.MAX_ATTEMPTS_EXCEEDED, "gave up after "
                            + (f.attempt() - 1) + " attempts (maxAttempts " + maxAttempts
                            + "); earlier attempts did not finish")
                    : Verdict.RUN;
            case ALREADY_CONFIRMED -> Verdict.DUPLICATE;
            case IN_PROGRESS -> atMostOnce ? Verdict.settle(Outcome.ACCEPTED, SettleReason.IN_PROGRESS)
                    : Verdict.later(Outcome.RELEASED, SettleReason.IN_PROGRESS, inProgressDelay);
        };
    }

    private Verdict handled(DeliveryFacts f) {
        Throwable failure = f.failure();
        if (mode == AcknowledgementMode.AT_MOST_ONCE) {
            // the broker settled it when it sent it: done either way, a failure loses it
            return failure == null ? Verdict.PROCESSED : Verdict.settle(Outcome.ACCEPTED, SettleReason.FAILED);
        }
        if (failure == null) {
            return Verdict.PROCESSED;
        }
        if (subscription.isPermanent(failure)) {
            return Verdict.reject(SettleReason.PERMANENT, FailureOutcomes.permanentCondition(failure),
                    FailureOutcomes.permanentDescription(failure));
        }
        if (f.holdsClaim() && f.attempt() >= maxAttempts) {
            return Verdict.reject(SettleReason.POISON, RejectionConditions.MAX_ATTEMPTS_EXCEEDED,
                    "failed " + f.attempt() + " attempts, last: " + Errors.describe(failure));
        }
        Duration delay = retryDelay(f.attempt(), f.jitterDraw());
        if (f.ordered()) {
            // its key's later deliveries wait for it: it is retried in place, never put behind them
            return Verdict.retry(transientOutcome(f.modifiedSupported()), delay);
        }
        return Verdict.later(transientOutcome(f.modifiedSupported()), SettleReason.FAILED, delay);
    }

    // ------------------------------------------------------------------ decisions around decide()

    /**
     * Something broke inside the consumer while it processed the delivery (a store bug, a linkage error): whatever
     * had been decided, the delivery goes back and its claim, if one is held, is released. Nothing is known about
     * the message itself, so it is neither counted nor dead-lettered.
     *
     * @return the verdict for a delivery whose processing failed unexpectedly
     */
    Verdict unexpectedFailure() {
        return UNEXPECTED_FAILURE;
    }

    /**
     * A delivery the broker sent beyond the link credit granted to it: it goes straight back, unread, before anything
     * about the message is known; it holds no claim and no slot.
     *
     * @return the verdict for a delivery that arrived beyond the link's credit
     */
    Verdict beyondCredit() {
        return BEYOND_CREDIT;
    }

    /**
     * How a held claim ends: confirmed before {@code accepted}/{@code processed} (the work is done), released before
     * every other outcome (a duplicate, an in-progress copy or a conflict holds no claim of its own).
     *
     * @param v a SETTLE verdict for a delivery whose claim is held
     * @return true to confirm the claim before settling, false to release it
     */
    boolean confirms(Verdict v) {
        // PERMANENT and POISON are accepted only when the rejection handler took the message over: it is done too
        return v.settles() && v.outcome() == Outcome.ACCEPTED && (v.reason() == SettleReason.PROCESSED
                || v.reason() == SettleReason.PERMANENT || v.reason() == SettleReason.POISON);
    }

    /**
     * Whether the subscription's {@link RejectionHandler} is asked about this verdict before it is sent: every
     * rejection, when the subscription has a handler.
     *
     * @param v a verdict just decided
     * @return true if the rejection handler is to be consulted
     */
    boolean consults(Verdict v) {
        return rejectionHandler && v.settles() && v.outcome() == Outcome.REJECTED;
    }

    /**
     * What the rejection handler's answer makes of a rejection: {@code ACCEPT} settles the delivery {@code accepted}
     * with the rejection's reason, its claim confirmed ({@link #confirms}); {@code REJECT}, and a handler that threw
     * or answered nothing ({@code decision} null), let the rejection proceed unchanged, so the message is never
     * accepted unless the application said so.
     *
     * @param rejected the rejection the handler was asked about ({@link #consults} true)
     * @param decision the handler's answer; null if it threw or returned null
     * @return the verdict to send
     */
    Verdict afterRejectionHandler(Verdict rejected, RejectionHandler.Decision decision) {
        if (!consults(rejected)) {
            throw new IllegalArgumentException("the rejection handler is asked about rejections only: " + rejected);
        }
        return decision == RejectionHandler.Decision.ACCEPT ? Verdict.settle(Outcome.ACCEPTED, rejected.reason())
                : rejected;
    }

    /**
     * The handler succeeded but its confirm was not recorded: the store kept failing until {@code confirmTimeout}
     * ran out, or it refuses the key it took when the delivery was claimed. The delivery is accepted anyway: the work
     * is done, and returning it would make it run again for sure; a later duplicate may run again (logged as an
     * error).
     *
     * @param processed the verdict whose claim was to be confirmed
     * @return what to settle the delivery with
     */
    Verdict confirmNotRecorded(Verdict processed) {
        if (!confirms(processed)) {
            throw new IllegalArgumentException("only a verdict that confirms its claim has a confirm to lose: "
                    + processed);
        }
        return processed;
    }

    /**
     * The verdict as it is sent: a hold (the retry back-off, {@code inProgressDelay}) is dropped while the consumer is
     * stopping, so the delivery goes back at once instead of keeping the shutdown waiting.
     *
     * @param v a SETTLE verdict
     * @param stopping whether the consumer is closing
     * @return {@code v}, without its delay when stopping
     */
    Verdict whenSent(Verdict v, boolean stopping) {
        if (stopping && v.action() == Verdict.Action.RETRY) {
            return Verdict.settle(v.outcome(), v.reason()); // no retry while stopping: it goes back as failed
        }
        return stopping && !v.delay().isZero() ? v.withoutDelay() : v;
    }

    /**
     * {@code TRANSACTIONAL}: no transaction can be declared on the delivery's session, so an outcome would go out as
     * a plain, final disposition. Only {@code released} is safe that way (the message comes back and the store
     * decides again: a processed one is a duplicate then); a plain {@code accepted} is never sent.
     *
     * @param v the verdict that was to be enlisted
     * @return what to send instead, outside any transaction
     */
    Verdict withoutTransaction(Verdict v) {
        return Verdict.settle(Outcome.RELEASED, v.reason());
    }

    /**
     * What happens at shutdown to deliveries received (or admitted and claimed) whose handlers have not started. In
     * the at-least-once modes they go back at once ({@code released}/{@code shutdown}, their claims released first),
     * on the closing thread. An at-most-once delivery cannot go back (the broker settled it when it sent it): the
     * handler threads handle it as usual before they stop.
     *
     * @return true if deliveries left at shutdown are handled, false if they are released
     */
    boolean handlesLeftAtShutdown() {
        return mode == AcknowledgementMode.AT_MOST_ONCE;
    }

    /**
     * @param modifiedSupported whether the broker implements {@code modified}
     * @return the outcome of a transient failure: the subscription's explicit choice, else {@code modified} where the
     *     broker implements it and {@code released} where it does not
     */
    Outcome transientOutcome(boolean modifiedSupported) {
        return failures.transientOutcome(modifiedSupported);
    }

    /**
     * @param attempt the attempt that failed (1 for the first)
     * @param draw a number in [0, 1)
     * @return how long to hold the delivery before it goes back (the retry back-off)
     */
    Duration retryDelay(int attempt, double draw) {
        return failures.retryDelay(attempt, draw);
    }
}

package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

/**
 * What is known about one delivery at one of the three points where its fate can be decided: when it was received
 * (decoded or not, keyed or not), when the store answered its claim, and when its handler returned or threw. Each
 * stage keeps the facts of the earlier ones. {@link OutcomePolicy#decide} turns facts into a {@link Verdict}.
 *
 * @param stage how far the delivery got
 * @param stopping the consumer is closing (the handler has not started)
 * @param linkGone the delivery's link or connection died before its handler started (it can no longer be settled)
 * @param decodeError why the message cannot be decoded, or null if it was
 * @param hasKey whether an idempotency key was found
 * @param storeDown the store is known to be down already (consumption is paused)
 * @param claim what the store answered (CLAIMED stage on); null if it was not asked yet or failed
 * @param storeError why the store failed to answer (CLAIMED stage on), or null if it answered
 * @param keyRefused the store failed because it refuses this one key while otherwise working (an
 *     {@code InvalidMessageIdException}); otherwise a failure means it is down as far as this call can tell
 * @param attempt the claim's attempt number (1 for the first; 1 when the handler ran without a claim)
 * @param failure what the handler threw, or null if it returned (HANDLED stage)
 * @param modifiedSupported whether the broker implements the {@code modified} outcome
 * @param jitterDraw a number in [0, 1) drawn for the retry back-off's jitter
 * @param conflict the store holds the key with a fingerprint other than this copy's (ALREADY_CONFIRMED or
 *     IN_PROGRESS only)
 * @param ordered the subscription orders by key and this delivery has one: a transient failure is retried in place,
 *     holding its key
 */
record DeliveryFacts(Stage stage, boolean stopping, boolean linkGone, String decodeError, boolean hasKey,
                     boolean storeDown, ClaimResult claim, String storeError, boolean keyRefused, int attempt,
                     Throwable failure,
                     boolean modifiedSupported, double jitterDraw, boolean conflict, boolean ordered) {

    /** How far a delivery got. */
    enum Stage {
        /** Received, decoded (or not) and keyed (or not); the store was not asked yet. */
        RECEIVED,
        /** The store answered the claim ({@link DeliveryFacts#claim()}), or failed to ({@link DeliveryFacts#storeError()}). */
        CLAIMED,
        /** The handler returned or threw. */
        HANDLED
    }

    /**
     * @param stopping the consumer is closing
     * @param decodeError why the message cannot be decoded, or null
     * @param hasKey whether a key was found
     * @param storeDown whether the store is known to be down
     * @return the facts of a delivery just received
     */
    static DeliveryFacts received(boolean stopping, String decodeError, boolean hasKey, boolean storeDown) {
        return received(stopping, decodeError, hasKey, storeDown, false);
    }

    /**
     * @param stopping the consumer is closing
     * @param decodeError why the message cannot be decoded, or null
     * @param hasKey whether a key was found
     * @param storeDown whether the store is known to be down
     * @param ordered whether its processing is ordered by a key it has
     * @return the facts of a delivery just received
     */
    static DeliveryFacts received(boolean stopping, String decodeError, boolean hasKey, boolean storeDown,
                                  boolean ordered) {
        return new DeliveryFacts(Stage.RECEIVED, stopping, false, decodeError, hasKey, storeDown, null, null, false, 0,
                null, true, 0.0, false, ordered);
    }

    /**
     * @param answer what the store answered
     * @param attempt the claim's attempt number (0 if none)
     * @return these facts plus the store's answer
     */
    DeliveryFacts claimed(ClaimResult answer, int attempt) {
        return claimed(answer, attempt, false);
    }

    /**
     * @param answer what the store answered
     * @param attempt the claim's attempt number (0 if none)
     * @param differs the store holds the key with another fingerprint
     * @return these facts plus the store's answer
     */
    DeliveryFacts claimed(ClaimResult answer, int attempt, boolean differs) {
        if (answer == null) {
            throw new IllegalArgumentException("the store's answer is required; a failure is storeFailed(...)");
        }
        return new DeliveryFacts(Stage.CLAIMED, stopping, linkGone, decodeError, hasKey, storeDown, answer, null, false,
                attempt, null, modifiedSupported, jitterDraw, differs, ordered);
    }

    /**
     * @param error why the store did not answer
     * @param refused the store refuses this one key (it works otherwise); false: it is down
     * @return these facts plus the store's failure to answer
     */
    DeliveryFacts storeFailed(String error, boolean refused) {
        return new DeliveryFacts(Stage.CLAIMED, stopping, linkGone, decodeError, hasKey, storeDown, null,
                error == null ? "unknown error" : error, refused, 0, null, modifiedSupported, jitterDraw, false, ordered);
    }

    /** @return whether the store gave this consumer the key (its claim is held until the delivery's claim ends) */
    boolean holdsClaim() {
        return claim == ClaimResult.CLAIMED;
    }

    /**
     * A claimed delivery waited for a handler thread (the intake claims the deliveries waiting in the client together);
     * now that one takes it, this is what changed meanwhile.
     *
     * @param stoppingNow the consumer is closing
     * @param linkGoneNow the delivery's link or connection died
     * @return these facts, at the same stage, with both brought up to date
     */
    DeliveryFacts waited(boolean stoppingNow, boolean linkGoneNow) {
        if (stoppingNow == stopping && linkGoneNow == linkGone) {
            return this;
        }
        return new DeliveryFacts(stage, stoppingNow, linkGoneNow, decodeError, hasKey, storeDown, claim, storeError,
                keyRefused, attempt, failure, modifiedSupported, jitterDraw, conflict, ordered);
    }

    /**
     * @param thrown why what the handler sent could not be sent (the handler returned)
     * @return these facts, as if the handler had thrown it
     */
    DeliveryFacts sendFailed(Throwable thrown) {
        return new DeliveryFacts(Stage.HANDLED, stopping, linkGone, decodeError, hasKey, storeDown, claim, storeError,
                keyRefused, attempt, thrown, modifiedSupported, jitterDraw, conflict, ordered);
    }

    /**
     * @param thrown what the handler threw, or null if it returned
     * @param modified whether the broker implements {@code modified}
     * @param draw the jitter draw in [0, 1)
     * @return these facts plus the handler's result
     */
    DeliveryFacts handled(Throwable thrown, boolean modified, double draw) {
        return new DeliveryFacts(Stage.HANDLED, stopping, linkGone, decodeError, hasKey, storeDown, claim, storeError,
                keyRefused, Math.max(1, attempt), thrown, modified, draw, conflict, ordered);
    }
}

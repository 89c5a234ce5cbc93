package org.acemq.amqp.consumer.internal;

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
 * @param store what the store answered (CLAIMED stage on)
 * @param storeError the store's error, for {@link StoreAnswer#DOWN} and {@link StoreAnswer#REFUSED_KEY}
 * @param attempt the claim's attempt number (1 for the first; 1 when the handler ran without a claim)
 * @param failure what the handler threw, or null if it returned (HANDLED stage)
 * @param modifiedSupported whether the broker implements the {@code modified} outcome
 * @param jitterDraw a number in [0, 1) drawn for the retry back-off's jitter
 * @param conflict the store holds the key with a fingerprint other than this copy's (ALREADY_CONFIRMED or
 *     IN_PROGRESS only)
 */
record DeliveryFacts(Stage stage, boolean stopping, boolean linkGone, String decodeError, boolean hasKey,
                     boolean storeDown, StoreAnswer store, String storeError, int attempt, Throwable failure,
                     boolean modifiedSupported, double jitterDraw, boolean conflict) {

    /** How far a delivery got. */
    enum Stage {
        /** Received, decoded (or not) and keyed (or not); the store was not asked yet. */
        RECEIVED,
        /** The store answered the claim (or failed to). */
        CLAIMED,
        /** The handler returned or threw. */
        HANDLED
    }

    /** What the store answered. */
    enum StoreAnswer {
        /** Not asked yet. */
        NOT_ASKED,
        /** This consumer owns the key now. */
        CLAIMED,
        /** The key is confirmed: a duplicate. */
        ALREADY_CONFIRMED,
        /** Another owner holds a live claim. */
        IN_PROGRESS,
        /** The store failed: it is down (or unreachable) as far as this call can tell. */
        DOWN,
        /** The store refused this one key while otherwise working. */
        REFUSED_KEY
    }

    /**
     * @param stopping the consumer is closing
     * @param decodeError why the message cannot be decoded, or null
     * @param hasKey whether a key was found
     * @param storeDown whether the store is known to be down
     * @return the facts of a delivery just received
     */
    static DeliveryFacts received(boolean stopping, String decodeError, boolean hasKey, boolean storeDown) {
        return new DeliveryFacts(Stage.RECEIVED, stopping, false, decodeError, hasKey, storeDown,
                StoreAnswer.NOT_ASKED, null, 0, null, true, 0.0, false);
    }

    /**
     * @param answer what the store answered
     * @param attempt the claim's attempt number (0 if none)
     * @param error the store's error, or null
     * @return these facts plus the store's answer
     */
    DeliveryFacts claimed(StoreAnswer answer, int attempt, String error) {
        return claimed(answer, attempt, error, false);
    }

    /**
     * @param answer what the store answered
     * @param attempt the claim's attempt number (0 if none)
     * @param error the store's error, or null
     * @param differs the store holds the key with another fingerprint
     * @return these facts plus the store's answer
     */
    DeliveryFacts claimed(StoreAnswer answer, int attempt, String error, boolean differs) {
        return new DeliveryFacts(Stage.CLAIMED, stopping, linkGone, decodeError, hasKey, storeDown, answer, error,
                attempt, null, modifiedSupported, jitterDraw, differs);
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
        return new DeliveryFacts(stage, stoppingNow, linkGoneNow, decodeError, hasKey, storeDown, store, storeError,
                attempt, failure, modifiedSupported, jitterDraw, conflict);
    }

    /**
     * @param thrown what the handler threw, or null if it returned
     * @param modified whether the broker implements {@code modified}
     * @param draw the jitter draw in [0, 1)
     * @return these facts plus the handler's result
     */
    DeliveryFacts handled(Throwable thrown, boolean modified, double draw) {
        return new DeliveryFacts(Stage.HANDLED, stopping, linkGone, decodeError, hasKey, storeDown, store, storeError,
                Math.max(1, attempt), thrown, modified, draw, conflict);
    }
}

package org.acemq.amqp.consumer;

/** What claiming a delivery's key in the store gave, as reported to a {@link ConsumerObserver}. */
public enum ClaimStatus {
    /** The key is now owned by this consumer. */
    CLAIMED,
    /** The key was confirmed already: a duplicate. */
    ALREADY_CONFIRMED,
    /** Another owner holds a live claim. */
    IN_PROGRESS,
    /** The store failed. */
    ERROR
}

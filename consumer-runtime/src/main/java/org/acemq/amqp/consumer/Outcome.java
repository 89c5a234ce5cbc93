package org.acemq.amqp.consumer;

/** The AMQP 1.0 outcome a delivery was settled with. */
public enum Outcome {
    /** The message is done and removed from the queue. */
    ACCEPTED,
    /** The message goes back to the queue; brokers do not count this as a failed attempt. */
    RELEASED,
    /** {@code modified(delivery-failed=true)}: back to the queue, counted as a failed attempt by the broker. */
    MODIFIED,
    /** The message is invalid or exhausted its attempts; brokers dead-letter or drop it. */
    REJECTED
}

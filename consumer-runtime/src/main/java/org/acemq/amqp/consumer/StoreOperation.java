package org.acemq.amqp.consumer;

/** The store calls the runtime makes, as reported to a {@link ConsumerObserver}. */
public enum StoreOperation {
    /** Claiming a key. */
    CLAIM,
    /** Recording completion. */
    CONFIRM,
    /** Giving a claim up after a failure. */
    RELEASE,
    /** Extending the lease of a running handler (heartbeat). */
    RENEW,
    /** Checking whether an unreachable store answers again. */
    PROBE
}

package org.acemq.amqp.consumer;

/** What the runtime does when the idempotency store cannot be reached while claiming a delivery. */
public enum StoreFailurePolicy {

    /**
     * The default. The handler does not run; the delivery is returned to the broker with {@code released} (which
     * does not count a delivery attempt); the runtime stops granting credit on every subscription, takes the credit
     * the broker still holds back with a drain, and probes the store with a back-off until it answers, then grants
     * every subscription its credit again. Nothing is lost and nothing is processed twice; throughput stops while the
     * store is down. On a broker that does not answer drains per spec (RabbitMQ 3.x) the outstanding credit cannot be
     * taken back: the broker may still send up to that credit (at most {@code concurrency + prefetch} per
     * subscription), and each of those deliveries is released once; then the link is quiet.
     */
    FAIL_CLOSED,

    /**
     * Keep processing without de-duplication: the handler runs without a claim and the delivery is accepted on
     * success. Every such delivery is reported to the observer ({@code claims{result=error}} and
     * {@code store.bypassed}). Duplicates that arrive while the store is down <b>are processed again</b>. Use only
     * for handlers that are idempotent on their own.
     */
    FAIL_OPEN
}

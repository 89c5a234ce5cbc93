package org.acemq.amqp.consumer.internal;

/**
 * A moving average of one subscription's handler run time (ticker nanoseconds): written by the run stage after each
 * handler, read by the intake to bound how far ahead it claims.
 */
final class HandlerTimes {

    private volatile long averageNanos;

    /** @param initialNanos what the average is until a handler has been timed */
    HandlerTimes(long initialNanos) {
        this.averageNanos = initialNanos;
    }

    /** @param tookNanos how long one handler ran */
    void record(long tookNanos) {
        long avg = averageNanos;
        averageNanos = avg + ((tookNanos - avg) >> 3);
    }

    /** @return the moving average, in ticker nanoseconds */
    long averageNanos() {
        return averageNanos;
    }
}

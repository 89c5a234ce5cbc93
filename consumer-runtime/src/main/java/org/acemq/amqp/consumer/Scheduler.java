package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.concurrent.Future;

/**
 * Runs the consumer's delayed work: held settlements (retry back-off, in-progress delay), lease heartbeats, store
 * probes, link re-attach, first-connection back-off and the outbox sweep. Pass your own to {@link
 * AmqpConsumer.Builder#scheduler} (with a matching {@link Ticker}) to move time in tests; by default each consumer runs
 * a private pool of two daemon threads and shuts it down in {@code close()}. A scheduler given to the builder is never
 * shut down by the consumer.
 *
 * <p><b>Threading:</b> tasks may block on the store (a probe, a lease renewal) for as long as the store takes, and the
 * outbox sweep on the broker (at most the connection's {@code requestTimeout} per batch), so a scheduler with one
 * thread delays the other tasks meanwhile; the runtime never runs two sweeps at once. Tasks never run on the caller's
 * thread before {@code schedule} returns.
 */
@FunctionalInterface
public interface Scheduler {

    /**
     * Runs {@code task} once, {@code delay} from now (as read by the consumer's {@link Ticker}).
     *
     * @param task what to run; it must not be run more than once
     * @param delay how long to wait, zero or positive
     * @return a handle whose {@code cancel} stops the task if it has not started
     * @throws java.util.concurrent.RejectedExecutionException if the scheduler is shut down
     */
    Future<?> schedule(Runnable task, Duration delay);
}

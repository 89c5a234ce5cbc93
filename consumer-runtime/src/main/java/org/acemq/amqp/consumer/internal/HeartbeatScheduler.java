package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.ScheduledFuture;

/**
 * Runs lease heartbeats. Internal (this package is not exported): the runtime uses its own scheduler; tests supply
 * one they drive by hand, so that lease renewal can be tested with moved time instead of sleeps.
 */
public interface HeartbeatScheduler {

    /**
     * Runs {@code beat} every {@code period} until the returned future is cancelled or {@code beat} throws.
     *
     * @param beat one renewal
     * @param period the time between renewals (a third of the lease)
     * @return the handle the runtime cancels when the handler returns
     */
    ScheduledFuture<?> scheduleAtFixedRate(Runnable beat, Duration period);
}

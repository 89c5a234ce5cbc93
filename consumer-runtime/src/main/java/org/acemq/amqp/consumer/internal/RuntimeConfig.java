package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.List;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;

/**
 * Everything {@link ConsumerRuntime} needs, validated by the public builder.
 *
 * @param scheduler the application's scheduler, or null for the runtime's own
 * @param scopePrefix the prefix of every derived subscription scope, or null for none
 * @param outboxSweepInterval the time between two outbox sweeps
 * @param outboxSweepMinAge the age an outbox entry must have for the sweep to take it
 * @param outboxMaxAge the oldest outbox entry age that is still healthy
 */
public record RuntimeConfig(String name, ConnectionSettings connection, IdempotencyStore store,
                            List<Subscription> subscriptions, ConsumerObserver observer,
                            StoreFailurePolicy storeFailurePolicy, Duration shutdownTimeout,
                            Duration creditCheckInterval, Duration confirmTimeout, Duration storeRetryDelay,
                            Duration maxStoreRetryDelay, int maxInFlightPerConnection, boolean failFastStart,
                            Ticker ticker, Scheduler scheduler, String scopePrefix,
                            Duration outboxSweepInterval, Duration outboxSweepMinAge, Duration outboxMaxAge) {
}

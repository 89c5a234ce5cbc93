package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.List;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.Subscription;

/**
 * Everything {@link ConsumerRuntime} needs, validated by the public builder.
 *
 * @param sessionIncomingCapacity internal, for tests only: the protonj2 session incoming capacity in bytes (the
 *     session window is this divided by the 64 KiB max-frame-size); 0 keeps protonj2's default (100 MiB)
 */
public record RuntimeConfig(String name, ConnectionSettings connection, IdempotencyStore store,
                            List<Subscription> subscriptions, ConsumerObserver observer,
                            StoreFailurePolicy storeFailurePolicy, Duration shutdownTimeout,
                            Duration creditCheckInterval, Duration confirmTimeout, Duration storeRetryDelay,
                            Duration maxStoreRetryDelay, int maxInFlightPerConnection, int sessionIncomingCapacity) {
}

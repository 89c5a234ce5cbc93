package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.List;

/**
 * A point-in-time view of a running consumer, free of any framework, meant to back a health endpoint (Spring Boot
 * Actuator {@code HealthIndicator}, a plain HTTP handler, a Kubernetes probe).
 *
 * @param state the consumer's lifecycle state
 * @param connected whether the AMQP connection is up (false while reconnecting)
 * @param storeReachable whether the last store call succeeded
 * @param paused whether credit is withheld because the store is unreachable
 * @param lastError the last error seen (connection, link or store), without credentials; null if none
 * @param subscriptions one entry per subscription
 * @param outbox what waits in the store's transactional outbox, as the outbox sweep last read it; null when the store
 *     keeps no outbox (it is not an {@link org.acemq.amqp.api.OutboxStore})
 */
public record ConsumerHealth(State state, boolean connected, boolean storeReachable, boolean paused, String lastError,
                             List<SubscriptionHealth> subscriptions, OutboxHealth outbox) {

    /**
     * Copies the list.
     *
     * @param state the consumer's lifecycle state
     * @param connected whether the AMQP connection is up
     * @param storeReachable whether the last store call succeeded
     * @param paused whether credit is withheld because the store is unreachable
     * @param lastError the last error seen, without credentials; null if none
     * @param subscriptions one entry per subscription; copied
     * @param outbox the store's outbox, or null when the store keeps none
     */
    public ConsumerHealth {
        subscriptions = List.copyOf(subscriptions);
    }

    /**
     * Without an outbox (a store that keeps none).
     *
     * @param state the consumer's lifecycle state
     * @param connected whether the AMQP connection is up
     * @param storeReachable whether the last store call succeeded
     * @param paused whether credit is withheld because the store is unreachable
     * @param lastError the last error seen, without credentials; null if none
     * @param subscriptions one entry per subscription; copied
     */
    public ConsumerHealth(State state, boolean connected, boolean storeReachable, boolean paused, String lastError,
                          List<SubscriptionHealth> subscriptions) {
        this(state, connected, storeReachable, paused, lastError, subscriptions, null);
    }

    /**
     * @return true when running, connected, the store reachable, every link attached (but those of subscriptions the
     *     application stopped: {@link SubscriptionHealth#stopped()}) and no message waiting in the outbox longer than
     *     its maximum age ({@link OutboxHealth#overdue()})
     */
    public boolean healthy() {
        return state == State.RUNNING && connected && storeReachable
                && subscriptions.stream().allMatch(s -> s.attached() || s.stopped())
                && (outbox == null || !outbox.overdue());
    }

    /**
     * What waits in the store's transactional outbox: messages handlers sent, committed with their work and not
     * dispatched to the broker yet. Read from the store by the outbox sweep when the consumer connects and then every
     * {@link AmqpConsumer.Builder#outboxSweepInterval(Duration) outboxSweepInterval}, never when this snapshot is
     * taken; between reads the oldest message's age goes on growing with the consumer's {@link Ticker}. Normally the
     * outbox holds only the messages of the last moments, between a handler's commit and their dispatch.
     *
     * @param pending messages not dispatched yet (the store's whole outbox, whichever consumer wrote them)
     * @param oldestPending how long the oldest of them has waited (from its commit, by the database's clock, to now,
     *     by this process's clock: a clock difference between the two shifts it), zero if none waits
     * @param failing pending messages whose last dispatch failed (the broker refused them, or did not take them)
     * @param maxAge the oldest age still healthy ({@link AmqpConsumer.Builder#outboxMaxAge(Duration)})
     * @param lastError why the last dispatch from the outbox that failed did (message-id, address and the broker's
     *     answer), kept until the outbox has no failing message; null if none
     */
    public record OutboxHealth(long pending, Duration oldestPending, long failing, Duration maxAge,
                               String lastError) {

        /**
         * Validates.
         *
         * @param pending messages not dispatched yet, {@code >= 0}
         * @param oldestPending how long the oldest has waited; not null
         * @param failing pending messages whose last dispatch failed, {@code >= 0}
         * @param maxAge the oldest age still healthy; not null
         * @param lastError why the last failed dispatch failed, or null
         */
        public OutboxHealth {
            java.util.Objects.requireNonNull(oldestPending, "oldestPending must not be null");
            java.util.Objects.requireNonNull(maxAge, "maxAge must not be null");
            if (pending < 0 || failing < 0) {
                throw new IllegalArgumentException("pending and failing must be >= 0, but were " + pending + " and "
                        + failing);
            }
        }

        /**
         * @return whether the oldest pending message has waited longer than {@link #maxAge()}: messages the consumer
         *     sent are not reaching the broker (it refuses them, or it or the store has been down that long)
         */
        public boolean overdue() {
            return oldestPending.compareTo(maxAge) > 0;
        }
    }

    /** Lifecycle of a consumer. */
    public enum State {
        /** Connecting and attaching. */
        STARTING,
        /** Consuming (possibly paused or reconnecting: see the other fields). */
        RUNNING,
        /** Draining and waiting for in-flight handlers. */
        STOPPING,
        /** Closed. */
        STOPPED,
        /** The connection was lost for good (reconnect gave up or was refused); the consumer must be recreated. */
        FAILED
    }

    /**
     * One subscription.
     *
     * @param name the subscription name
     * @param address the address consumed
     * @param attached whether its link is attached (false while the connection is down or the link is being
     *     re-attached after the broker detached it)
     * @param inFlight deliveries received and not yet settled
     * @param credit link credit granted and not yet used
     * @param oldestInFlight how long the oldest unsettled delivery has been held (waiting, running or being
     *     settled), zero if none
     * @param oldestClaim how long the oldest store claim this subscription holds has been held, zero if none: in
     *     practice the running time of the longest-running handler (a handler that hangs makes it grow without
     *     bound while its lease keeps being renewed)
     * @param stopped whether the application stopped it ({@link org.acemq.amqp.consumer.SubscriptionControl#stop()}
     *     or {@code autoStartup(false)}): unattached on purpose, not counted against {@link #healthy()}
     */
    public record SubscriptionHealth(String name, String address, boolean attached, int inFlight, int credit,
                                     Duration oldestInFlight, Duration oldestClaim, boolean stopped) {

        /**
         * Validates.
         *
         * @param name the subscription name
         * @param address the address consumed
         * @param attached whether its link is attached
         * @param inFlight deliveries received and not yet settled
         * @param credit link credit granted and not yet used
         * @param oldestInFlight how long the oldest unsettled delivery has been held; not null
         * @param oldestClaim how long the oldest store claim has been held; not null
         * @param stopped whether the application stopped it ({@link org.acemq.amqp.consumer.SubscriptionControl#stop()}
         *     or {@code autoStartup(false)}): unattached on purpose
         */
        public SubscriptionHealth {
            java.util.Objects.requireNonNull(oldestInFlight, "oldestInFlight must not be null");
            java.util.Objects.requireNonNull(oldestClaim, "oldestClaim must not be null");
        }

        /**
         * Without claim age (reported as zero).
         *
         * @param name the subscription name
         * @param address the address consumed
         * @param attached whether its link is attached
         * @param inFlight deliveries received and not yet settled
         * @param credit link credit granted and not yet used
         * @param oldestInFlight how long the oldest unsettled delivery has been held
         */
        public SubscriptionHealth(String name, String address, boolean attached, int inFlight, int credit,
                                  Duration oldestInFlight) {
            this(name, address, attached, inFlight, credit, oldestInFlight, Duration.ZERO, false);
        }

        /**
         * Not stopped by the application.
         *
         * @param name the subscription name
         * @param address the address consumed
         * @param attached whether its link is attached
         * @param inFlight deliveries received and not yet settled
         * @param credit link credit granted and not yet used
         * @param oldestInFlight how long the oldest unsettled delivery has been held
         * @param oldestClaim how long the oldest store claim has been held
         */
        public SubscriptionHealth(String name, String address, boolean attached, int inFlight, int credit,
                                  Duration oldestInFlight, Duration oldestClaim) {
            this(name, address, attached, inFlight, credit, oldestInFlight, oldestClaim, false);
        }
    }
}

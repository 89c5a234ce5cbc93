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
 */
public record ConsumerHealth(State state, boolean connected, boolean storeReachable, boolean paused, String lastError,
                             List<SubscriptionHealth> subscriptions) {

    /**
     * Copies the list.
     *
     * @param state the consumer's lifecycle state
     * @param connected whether the AMQP connection is up
     * @param storeReachable whether the last store call succeeded
     * @param paused whether credit is withheld because the store is unreachable
     * @param lastError the last error seen, without credentials; null if none
     * @param subscriptions one entry per subscription; copied
     */
    public ConsumerHealth {
        subscriptions = List.copyOf(subscriptions);
    }

    /**
     * @return true when running, connected, the store reachable and every link attached (but those of subscriptions
     *     the application stopped: {@link SubscriptionHealth#stopped()})
     */
    public boolean healthy() {
        return state == State.RUNNING && connected && storeReachable
                && subscriptions.stream().allMatch(s -> s.attached() || s.stopped());
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

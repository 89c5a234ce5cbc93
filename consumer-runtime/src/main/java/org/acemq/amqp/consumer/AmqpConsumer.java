package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.internal.ConsumerRuntime;
import org.acemq.amqp.consumer.internal.RuntimeConfig;

/**
 * An idempotent AMQP 1.0 consumer: receives from one or more addresses over one connection, claims every delivery in
 * an {@link IdempotencyStore}, runs the application's {@link MessageHandler} for new messages only, and settles each
 * delivery with the outcome its fate calls for (see {@link Subscription} for the policy).
 *
 * <pre>{@code
 * try (AmqpConsumer consumer = AmqpConsumer.builder()
 *         .connection(ConnectionSettings.builder("localhost", 5672).build())
 *         .store(InMemoryIdempotencyStore.ofDefaults())
 *         .subscribe("orders", envelope -> orders.apply(envelope.body(String.class)))
 *         .start()) {
 *     awaitShutdownSignal();
 * }
 * }</pre>
 *
 * <p><b>Threading.</b> Each subscription has {@link Subscription#concurrency()} handler threads, each taking the
 * next delivery from the client and running the handler on it; a control thread attaches links and a {@link Scheduler}
 * runs delayed work; no handler code runs on the protonj2 I/O thread. The number of deliveries a subscription holds
 * (being handled, waiting, or promised by link credit) never exceeds {@link Subscription#maxInFlight()}: credit is
 * granted by the runtime only as deliveries complete. This class is thread-safe.
 *
 * <p><b>Failures.</b> A lost connection is re-established with back-off (see {@link ConnectionSettings}); deliveries
 * received on the old connection are never reported as accepted, and their redeliveries are absorbed by the store.
 * A link the broker detaches is re-attached with back-off. An unreachable store pauses consumption (see
 * {@link StoreFailurePolicy}).
 */
public final class AmqpConsumer implements AutoCloseable {

    /** How long {@link #close()} waits for running handlers: 30 s. */
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    /**
     * The interval of the periodic credit check: 1 s. Used only where the runtime cannot hook into protonj2's engine (a
     * protonj2 other than 1.1.0); see {@link Builder#creditCheckInterval(Duration)}.
     */
    public static final Duration DEFAULT_CREDIT_CHECK_INTERVAL = Duration.ofSeconds(1);
    /**
     * How long the runtime keeps trying to record a confirmation after a handler succeeded: 30 s (the default lease).
     * The delivery stays unsettled meanwhile, so the broker does not hand it to anyone else, and a store that comes
     * back within this time loses nothing.
     */
    public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);
    /** First delay between store probes while the store is unreachable: 100 ms (doubling). */
    public static final Duration DEFAULT_STORE_RETRY_DELAY = Duration.ofMillis(100);
    /** Longest delay between store probes: 10 s. */
    public static final Duration DEFAULT_MAX_STORE_RETRY_DELAY = Duration.ofSeconds(10);
    /**
     * How often the outbox sweep looks for messages left undispatched in the store's transactional outbox: 10 s (see
     * {@link Builder#outboxSweepInterval(Duration)}).
     */
    public static final Duration DEFAULT_OUTBOX_SWEEP_INTERVAL = Duration.ofSeconds(10);
    /**
     * How long a message must have waited in the outbox before the sweep takes it: 1 min, longer than the dispatch that
     * follows every commit normally takes (it waits at most the connection's {@code requestTimeout}, 30 s by default,
     * for the broker, and its mark rides on the batch's confirm). See {@link Builder#outboxSweepMinAge(Duration)}.
     */
    public static final Duration DEFAULT_OUTBOX_SWEEP_MIN_AGE = Duration.ofMinutes(1);
    /**
     * How long a message may wait in the outbox before {@link ConsumerHealth#healthy()} turns false: 5 min (see
     * {@link Builder#outboxMaxAge(Duration)}).
     */
    public static final Duration DEFAULT_OUTBOX_MAX_AGE = Duration.ofMinutes(5);

    private final ConsumerRuntime runtime;

    private AmqpConsumer(ConsumerRuntime runtime) {
        this.runtime = runtime;
    }

    /** @return a builder */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the consumer's name (used in thread names and logs) */
    public String name() {
        return runtime.name();
    }

    /**
     * @param subscription a subscription's name ({@link Subscription#name()})
     * @return the handle that stops, starts, pauses and resumes that subscription while the consumer runs
     * @throws IllegalArgumentException if the consumer has no subscription of that name
     */
    public SubscriptionControl subscription(String subscription) {
        if (!runtime.hasSubscription(subscription)) {
            throw new IllegalArgumentException("consumer '" + name() + "' has no subscription named '" + subscription
                    + "'; it has " + runtime.subscriptionNames());
        }
        return new SubscriptionControl(runtime, subscription);
    }

    /** @return a snapshot of the consumer's state */
    public ConsumerHealth health() {
        return runtime.health();
    }

    /**
     * Stops gracefully within the configured shutdown timeout: stops granting credit and drains the links, releases
     * deliveries that were received but not started (in {@link AcknowledgementMode#AT_MOST_ONCE}, where they are
     * already settled and cannot go back, it handles them instead), lets running handlers finish and settles them,
     * then closes the connection. Idempotent.
     */
    @Override
    public void close() {
        runtime.close(runtime.shutdownTimeout());
    }

    /**
     * Stops gracefully, waiting at most {@code timeout} for running handlers. Handlers still running then are
     * interrupted and a warning is logged; their deliveries are returned to the broker by the link's default outcome
     * ({@code released}) when the link closes. A handler that stops on the interrupt releases its claim; one that
     * goes on keeps it, so copies delivered elsewhere meanwhile are {@code IN_PROGRESS}, until it finishes (confirm)
     * or its lease lapses. Worker threads are not daemon threads: a handler that never returns keeps the JVM alive.
     *
     * @param timeout how long to wait for running handlers
     * @return true if every handler finished in time
     */
    public boolean close(Duration timeout) {
        return runtime.close(Validation.notNegative("timeout", timeout));
    }

    /** Builds and starts an {@link AmqpConsumer}. */
    public static final class Builder {
        private ConnectionSettings connection;
        private IdempotencyStore store;
        private final List<Subscription> subscriptions = new ArrayList<>();
        private ConsumerObserver observer = ConsumerObserver.NOOP;
        private StoreFailurePolicy storeFailurePolicy = StoreFailurePolicy.FAIL_CLOSED;
        private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
        private Duration creditCheckInterval = DEFAULT_CREDIT_CHECK_INTERVAL;
        private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
        private Duration storeRetryDelay = DEFAULT_STORE_RETRY_DELAY;
        private Duration maxStoreRetryDelay = DEFAULT_MAX_STORE_RETRY_DELAY;
        private Duration outboxSweepInterval = DEFAULT_OUTBOX_SWEEP_INTERVAL;
        private Duration outboxSweepMinAge = DEFAULT_OUTBOX_SWEEP_MIN_AGE;
        private Duration outboxMaxAge = DEFAULT_OUTBOX_MAX_AGE;
        private int maxInFlightPerConnection;
        private String name = "acemq";
        private boolean failFastStart;
        private Ticker ticker = Ticker.system();
        private Scheduler scheduler;
        private String scopePrefix;

        private Builder() {
        }

        /**
         * @param settings where and how to connect (required)
         * @return this builder
         */
        public Builder connection(ConnectionSettings settings) {
            this.connection = Objects.requireNonNull(settings, "connection must not be null");
            return this;
        }

        /**
         * Shorthand for {@code connection(ConnectionSettings.builder(host, port).build())}.
         *
         * @param host broker host
         * @param port broker port
         * @return this builder
         */
        public Builder broker(String host, int port) {
            return connection(ConnectionSettings.builder(host, port).build());
        }

        /**
         * @param store the idempotency store shared by every subscription (required)
         * @return this builder
         */
        public Builder store(IdempotencyStore store) {
            this.store = Objects.requireNonNull(store, "store must not be null");
            return this;
        }

        /**
         * Adds a subscription with default settings.
         *
         * @param address the address to consume
         * @param handler the handler
         * @return this builder
         */
        public Builder subscribe(String address, MessageHandler handler) {
            return subscribe(Subscription.builder(address, handler).build());
        }

        /**
         * @param subscription a subscription to add
         * @return this builder
         */
        public Builder subscribe(Subscription subscription) {
            subscriptions.add(Objects.requireNonNull(subscription, "subscription must not be null"));
            return this;
        }

        /**
         * @param observer receives every event (default: none); Micrometer metrics and Observations:
         *     {@code org.acemq.amqp.consumer.micrometer.MicrometerObserver}
         * @return this builder
         */
        public Builder observer(ConsumerObserver observer) {
            this.observer = Objects.requireNonNull(observer, "observer must not be null");
            return this;
        }

        /**
         * @param policy what to do while the store is unreachable (default {@link StoreFailurePolicy#FAIL_CLOSED})
         * @return this builder
         */
        public Builder storeFailurePolicy(StoreFailurePolicy policy) {
            this.storeFailurePolicy = Objects.requireNonNull(policy, "storeFailurePolicy must not be null");
            return this;
        }

        /**
         * @param timeout how long {@link AmqpConsumer#close()} waits for running handlers (default 30 s)
         * @return this builder
         */
        public Builder shutdownTimeout(Duration timeout) {
            this.shutdownTimeout = Validation.notNegative("shutdownTimeout", timeout);
            return this;
        }

        /**
         * The runtime repairs link credit on the events that eat it: an aborted transfer (it uses one credit and is
         * never handed out) and a session window closed by payload-less frames while credit is outstanding. It sees
         * those events through hooks into protonj2 1.1.0's engine. Where the hooks cannot be installed (another
         * protonj2 version; it is logged once), it falls back to a periodic check instead: a link that was idle with
         * unused credit for a whole interval is drained and re-granted. The check costs one timer per consumer and, per
         * idle link and interval, one drain and one grant. On a broker that does not answer drains per spec (RabbitMQ
         * 3.x) it does nothing at all (no drain, no reconnect, no log line).
         *
         * @param interval the interval of the fallback credit check (default 1 s)
         * @return this builder
         */
        public Builder creditCheckInterval(Duration interval) {
            this.creditCheckInterval = Validation.positive("creditCheckInterval", interval);
            return this;
        }

        /**
         * @param timeout how long to keep retrying (with back-off up to 1 s) to record a confirmation after the handler
         *     succeeded (default 30 s); the delivery stays unsettled meanwhile. If the store is still failing then, the
         *     delivery is accepted anyway, because the work is done (see README)
         * @return this builder
         */
        public Builder confirmTimeout(Duration timeout) {
            this.confirmTimeout = Validation.positive("confirmTimeout", timeout);
            return this;
        }

        /**
         * @param first first delay between probes of an unreachable store (default 100 ms)
         * @param max longest delay (default 10 s)
         * @return this builder
         */
        public Builder storeRetryDelay(Duration first, Duration max) {
            Validation.positive("storeRetryDelay", first);
            Validation.positive("maxStoreRetryDelay", max);
            if (max.compareTo(first) < 0) {
                throw new IllegalArgumentException("maxStoreRetryDelay must be >= storeRetryDelay (" + first
                        + "), but was " + max);
            }
            this.storeRetryDelay = first;
            this.maxStoreRetryDelay = max;
            return this;
        }

        /**
         * The outbox sweep repairs what a crash left in the store's transactional outbox (a store that is an
         * {@link org.acemq.amqp.api.OutboxStore}, such as the JDBC store with its {@code JdbcTransactionalHandler}):
         * messages handlers sent, committed with their work, and not dispatched because the process died between the
         * commit and the dispatch, or because the broker did not take them. It runs when the consumer connects
         * (reconnects included) and then every {@code interval}, on the consumer's {@link Scheduler}: it takes the
         * oldest waiting messages ({@link #outboxSweepMinAge(Duration) at least so old}) in batches of 100, sends
         * them, waits for the broker to accept each, and marks the accepted ones dispatched; one that is refused or not
         * taken stays in the outbox with the failure recorded, and is tried again later (the JDBC store holds it back
         * for its lease). Each run also reads the outbox's status for {@link ConsumerHealth#outbox()} and the outbox
         * meters. While the broker is disconnected it only reads the status; while the store does not answer it does
         * nothing. With a store that keeps no outbox there is no sweep.
         *
         * @param interval the time between two runs (default 10 s)
         * @return this builder
         */
        public Builder outboxSweepInterval(Duration interval) {
            this.outboxSweepInterval = Validation.positive("outboxSweepInterval", interval);
            return this;
        }

        /**
         * The sweep takes only messages that have waited in the outbox at least this long (by the database's clock),
         * so that it does not send what the dispatch that follows every commit is sending at that moment. Shorter
         * repairs a crash sooner; a message the sweep sends while that dispatch also does goes out twice with the same
         * message-id, which an idempotent receiver absorbs. Keep it above the connection's {@code requestTimeout}.
         *
         * @param minAge the minimum age (default 1 min); zero takes every waiting message
         * @return this builder
         */
        public Builder outboxSweepMinAge(Duration minAge) {
            this.outboxSweepMinAge = Validation.notNegative("outboxSweepMinAge", minAge);
            return this;
        }

        /**
         * {@link ConsumerHealth#healthy()} turns false (and the Spring Boot health contributor DOWN) while the oldest
         * message waiting in the outbox is older than this: what handlers sent is not reaching the broker. Must be
         * longer than {@link #outboxSweepMinAge(Duration)} plus {@link #outboxSweepInterval(Duration)}, the time a
         * message left behind by a crash may wait for the sweep.
         *
         * @param maxAge the oldest age still healthy (default 5 min)
         * @return this builder
         */
        public Builder outboxMaxAge(Duration maxAge) {
            this.outboxMaxAge = Validation.positive("outboxMaxAge", maxAge);
            return this;
        }

        /**
         * Caps the deliveries held by all subscriptions of this consumer together (default 0: no cap beyond each
         * subscription's own {@link Subscription#maxInFlight()}). The cap is split into fair shares: each subscription
         * may hold {@code cap / subscriptions}, or its own {@code maxInFlight} if that is smaller (what one cannot use
         * goes to the others), so none can take the whole cap and starve another. Whenever capacity frees (a delivery
         * finished, an aborted transfer, a drain, a link detached, a pause ended) every subscription below its share
         * is granted credit at once, not only the one that freed it. Where the broker answers drains per spec, the
         * share of a subscription whose link is down is lent to the others and taken back by a drain when it returns.
         * Must be 0 or at least the number of subscriptions.
         *
         * @param deliveries the cap, or 0 for none
         * @return this builder
         */
        public Builder maxInFlightPerConnection(int deliveries) {
            this.maxInFlightPerConnection = Validation.atLeast("maxInFlightPerConnection", 0, deliveries);
            return this;
        }

        /**
         * @param name a name for threads and logs (default "acemq")
         * @return this builder
         */
        public Builder name(String name) {
            this.name = Validation.notBlank("name", name);
            return this;
        }

        /**
         * Prefixes the default scope of every subscription (see {@link Subscription.Builder#scope}) with
         * {@code prefix + "/"}: for example a service name, where services that consume queues of the same name (on
         * different brokers or virtual hosts) share one store table. A subscription with a scope of its own keeps it
         * as it is. Changing the prefix of a running service starts its keys afresh (copies of messages handled before
         * the change are handled again), as renaming a queue does.
         *
         * @param prefix the prefix (default: none)
         * @return this builder
         */
        public Builder scopePrefix(String prefix) {
            org.acemq.amqp.api.MessageIds.escapeScope(prefix);
            this.scopePrefix = prefix;
            return this;
        }

        /**
         * By default {@link #start()} returns at once while the first connection is tried in the background with the
         * connection's reconnect back-off ({@link ConnectionSettings#reconnectDelay()}, up to
         * {@link ConnectionSettings#maxReconnectAttempts()} attempts); {@link AmqpConsumer#health()} says how far it
         * got (state {@code STARTING}, the last error). A subscription whose attach the broker refuses is retried
         * likewise, and reported unattached meanwhile. Credentials the broker refuses end the attempts (state
         * {@code FAILED}).
         *
         * @param failFast true to connect and attach everything inside {@link #start()} and throw if that fails
         *     (default false)
         * @return this builder
         */
        public Builder failFastStart(boolean failFast) {
            this.failFastStart = failFast;
            return this;
        }

        /**
         * @param ticker the time source (default {@link Ticker#system()}); give a matching {@link #scheduler}
         * @return this builder
         */
        public Builder ticker(Ticker ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker must not be null");
            return this;
        }

        /**
         * @param scheduler runs the consumer's delayed work (default: a private pool of two daemon threads, shut down
         *     by {@code close()}); it is never shut down by the consumer
         * @return this builder
         */
        public Builder scheduler(Scheduler scheduler) {
            this.scheduler = Objects.requireNonNull(scheduler, "scheduler must not be null");
            return this;
        }

        /**
         * Validates the settings and starts consuming: connects and attaches every subscription, in the background
         * unless {@link #failFastStart(boolean)}.
         *
         * @return the running consumer (still connecting, unless {@link #failFastStart(boolean) fail-fast})
         * @throws IllegalArgumentException if the settings are incomplete or inconsistent
         * @throws AcemqException with {@link #failFastStart(boolean) fail-fast start} only: if the broker cannot be
         *     reached or a link cannot be attached; nothing is left open
         */
        public AmqpConsumer start() {
            if (connection == null) {
                throw new IllegalArgumentException("connection must be set (builder().connection(...) or broker(...))");
            }
            if (store == null) {
                throw new IllegalArgumentException("store must be set");
            }
            if (subscriptions.isEmpty()) {
                throw new IllegalArgumentException("at least one subscription must be added");
            }
            Set<String> names = new LinkedHashSet<>();
            for (Subscription s : subscriptions) {
                if (!names.add(s.name())) {
                    throw new IllegalArgumentException("subscription names must be unique, but '" + s.name()
                            + "' was used twice");
                }
            }
            if (maxInFlightPerConnection != 0 && maxInFlightPerConnection < subscriptions.size()) {
                throw new IllegalArgumentException("maxInFlightPerConnection must be 0 or >= the number of "
                        + "subscriptions (" + subscriptions.size() + "), but was " + maxInFlightPerConnection);
            }
            if (outboxMaxAge.compareTo(outboxSweepMinAge.plus(outboxSweepInterval)) <= 0) {
                throw new IllegalArgumentException("outboxMaxAge must be > outboxSweepMinAge + outboxSweepInterval ("
                        + outboxSweepMinAge.plus(outboxSweepInterval) + "), but was " + outboxMaxAge);
            }
            RuntimeConfig config = new RuntimeConfig(name, connection, store, List.copyOf(subscriptions), observer,
                    storeFailurePolicy, shutdownTimeout, creditCheckInterval, confirmTimeout, storeRetryDelay,
                    maxStoreRetryDelay, maxInFlightPerConnection, failFastStart, ticker, scheduler, scopePrefix,
                    outboxSweepInterval, outboxSweepMinAge, outboxMaxAge);
            ConsumerRuntime runtime = new ConsumerRuntime(config);
            runtime.start();
            return new AmqpConsumer(runtime);
        }
    }
}

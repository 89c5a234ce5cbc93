package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.ConsumerHealth.State;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.ClientOptions;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.SessionOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer: a protonj2 connection, its sessions, one {@link SubscriptionRunner} per subscription, the store gate
 * and a small scheduler for delays, lease heartbeats and store probes.
 *
 * <p>The connection generation counts connection losses. A delivery remembers the generation it arrived in; protonj2
 * silently drops dispositions for deliveries of an earlier generation (while reporting them settled), so the runtime
 * never settles or counts those.
 */
public final class ConsumerRuntime {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerRuntime.class);

    private final RuntimeConfig config;
    private final ConsumerObserver observer;
    private final StoreAccess store;
    private final StoreGate gate;
    private final SharedBudget budget;
    private final ScheduledThreadPoolExecutor scheduler;
    private final HeartbeatScheduler heartbeats;
    private final AtomicLong connectionGeneration = new AtomicLong();
    private final AtomicInteger wakeCursor = new AtomicInteger();
    private final List<SubscriptionRunner> runners = new ArrayList<>();
    private final Map<String, Session> sharedSessions = new LinkedHashMap<>();
    private final List<Session> sessions = new ArrayList<>();

    private Client client;
    private Connection connection;
    private volatile State state = State.STARTING;
    private volatile boolean connected;
    private volatile String lastError;
    private Boolean closeResult;

    /** @param config validated settings */
    public ConsumerRuntime(RuntimeConfig config) {
        this(config, null);
    }

    /**
     * @param config validated settings
     * @param heartbeats runs lease heartbeats (tests drive their own), or null for the runtime's {@link SweepingHeartbeats}
     */
    public ConsumerRuntime(RuntimeConfig config, HeartbeatScheduler heartbeats) {
        this.config = config;
        this.observer = new SafeObserver(config.observer());
        this.store = new StoreAccess(config.store(), observer);
        this.budget = new SharedBudget(config.maxInFlightPerConnection());
        AtomicInteger threads = new AtomicInteger();
        this.scheduler = new ScheduledThreadPoolExecutor(2, r -> {
            Thread t = new Thread(r, config.name() + "-scheduler-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.scheduler.setRemoveOnCancelPolicy(true);
        this.heartbeats = heartbeats != null ? heartbeats : new SweepingHeartbeats(scheduler);
        this.gate = new StoreGate(store, config.storeFailurePolicy(), observer, scheduler, config.storeRetryDelay(),
                config.maxStoreRetryDelay(), this::pauseAll, this::wakeAll);
    }

    /** Connects and attaches every subscription; on failure closes what was opened and throws. */
    public void start() {
        try {
            client = Client.create(new ClientOptions().id(config.name()));
            connection = client.connect(config.connection().host(), config.connection().port(),
                    connectionOptions(config.connection()));
            connection.openFuture().get(config.connection().openTimeout().toMillis(), TimeUnit.MILLISECONDS);
            connected = true;
            // A store that is down at start-up pauses the consumer from the first moment: no credit, no loss.
            try {
                store.probe();
            } catch (RuntimeException e) {
                gate.failure(e);
            }
            for (Subscription spec : config.subscriptions()) {
                SubscriptionRunner runner = new SubscriptionRunner(this, spec, sessionFor(spec));
                runners.add(runner);
                runner.start();
            }
            state = State.RUNNING;
            LOG.info("Consumer '{}' started: {} subscription(s) on {}:{}", config.name(), runners.size(),
                    config.connection().host(), config.connection().port());
        } catch (ClientException | ExecutionException | TimeoutException | RuntimeException e) {
            String what = "cannot start consumer '" + config.name() + "' on " + config.connection().host() + ":"
                    + config.connection().port() + ": " + Errors.describe(e);
            closeQuietly();
            connected = false;
            state = State.FAILED;
            throw new AcemqException(what, Errors.unwrap(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closeQuietly();
            state = State.FAILED;
            throw new AcemqException("interrupted while starting consumer '" + config.name() + "'", e);
        }
    }

    private ConnectionOptions connectionOptions(ConnectionSettings s) {
        ConnectionOptions o = new ConnectionOptions();
        o.openTimeout(s.openTimeout().toMillis());
        o.requestTimeout(s.requestTimeout().toMillis());
        o.drainTimeout(s.requestTimeout().toMillis());
        o.closeTimeout(s.requestTimeout().toMillis());
        o.idleTimeout(s.idleTimeout().toMillis());
        if (s.user() != null) {
            o.user(s.user());
            o.password(s.password());
        }
        if (s.virtualHost() != null) {
            o.virtualHost(s.virtualHost());
        }
        if (s.tls()) {
            o.sslEnabled(true);
            o.sslOptions().verifyHost(s.verifyHost());
            if (s.sslContext() != null) {
                o.sslOptions().sslContextOverride(s.sslContext());
            }
            if (s.trustStorePath() != null) {
                o.sslOptions().trustStoreLocation(s.trustStorePath());
                o.sslOptions().trustStorePassword(s.trustStorePassword());
            }
            if (s.keyStorePath() != null) {
                o.sslOptions().keyStoreLocation(s.keyStorePath());
                o.sslOptions().keyStorePassword(s.keyStorePassword());
            }
        }
        o.reconnectEnabled(s.reconnect());
        if (s.reconnect()) {
            o.reconnectOptions().reconnectDelay((int) s.reconnectDelay().toMillis());
            o.reconnectOptions().maxReconnectDelay((int) s.maxReconnectDelay().toMillis());
            o.reconnectOptions().maxReconnectAttempts(s.maxReconnectAttempts());
            o.reconnectOptions().useReconnectBackOff(true);
            o.reconnectOptions().maxInitialConnectionAttempts(1);
            for (String location : s.failoverLocations()) {
                int colon = location.lastIndexOf(':');
                o.reconnectOptions().addReconnectLocation(location.substring(0, colon),
                        Integer.parseInt(location.substring(colon + 1)));
            }
        }
        o.interruptedHandler((c, e) -> onInterrupted(e.failureCause()));
        o.reconnectedHandler((c, e) -> onReconnected());
        o.disconnectedHandler((c, e) -> connectionFailed(e.failureCause()));
        return o;
    }

    private Session sessionFor(Subscription spec) throws ClientException, ExecutionException, InterruptedException,
            TimeoutException {
        if (spec.sessionGroup() != null && sharedSessions.containsKey(spec.sessionGroup())) {
            return sharedSessions.get(spec.sessionGroup());
        }
        SessionOptions options = new SessionOptions();
        options.openTimeout(config.connection().openTimeout().toMillis());
        options.requestTimeout(config.connection().requestTimeout().toMillis());
        options.drainTimeout(config.connection().requestTimeout().toMillis());
        if (config.sessionIncomingCapacity() > 0) {
            options.incomingCapacity(config.sessionIncomingCapacity());
        }
        Session session = connection.openSession(options);
        session.openFuture().get(config.connection().openTimeout().toMillis(), TimeUnit.MILLISECONDS);
        sessions.add(session);
        if (spec.sessionGroup() != null) {
            sharedSessions.put(spec.sessionGroup(), session);
        }
        return session;
    }

    // ------------------------------------------------------------------ connection events

    private void onInterrupted(Throwable cause) {
        connectionGeneration.incrementAndGet();
        // protonj2 calls this again for every failed reconnect attempt; report the outage once.
        boolean wasConnected = connected;
        connected = false;
        lastError = "connection: " + (cause == null ? "interrupted" : Errors.describe(cause));
        if (!wasConnected) {
            LOG.debug("Consumer '{}': reconnect attempt failed ({})", config.name(), lastError);
            return;
        }
        LOG.warn("Consumer '{}' lost its connection ({}); reconnecting. Deliveries in hand will not be settled; the "
                + "broker redelivers them and the store absorbs the copies", config.name(), lastError);
        observer.connectionInterrupted(true);
        for (SubscriptionRunner r : runners) {
            r.connectionInterrupted();
        }
    }

    private void onReconnected() {
        connected = true;
        LOG.info("Consumer '{}' reconnected", config.name());
        observer.connectionInterrupted(false);
        for (SubscriptionRunner r : runners) {
            r.connectionRestored();
        }
    }

    void connectionFailed(Throwable cause) {
        if (state == State.STOPPING || state == State.STOPPED) {
            return;
        }
        connectionGeneration.incrementAndGet();
        boolean wasConnected = connected;
        connected = false;
        lastError = "connection: " + (cause == null ? "closed" : Errors.describe(cause));
        if (state != State.FAILED) {
            state = State.FAILED;
            LOG.error("Consumer '{}' lost its connection for good ({}); it must be restarted", config.name(),
                    lastError);
            if (wasConnected) {
                observer.connectionInterrupted(true);
            }
        }
    }

    // ------------------------------------------------------------------ capacity

    boolean paused() {
        return gate.paused();
    }

    private void pauseAll() {
        for (SubscriptionRunner r : runners) {
            r.pause();
        }
    }

    /** Re-evaluates every subscription, starting at a rotating position so none is always served last. */
    void wakeAll() {
        List<SubscriptionRunner> all = List.copyOf(runners);
        if (all.isEmpty()) {
            return;
        }
        int start = Math.floorMod(wakeCursor.getAndIncrement(), all.size());
        for (int i = 0; i < all.size(); i++) {
            all.get((start + i) % all.size()).tryGrant();
        }
    }

    /**
     * A delivery of {@code runner} finished. With a shared in-flight budget the freed capacity may belong to any
     * waiting subscription, so all are re-evaluated (the QPID-8751 lesson); otherwise only the runner's own.
     */
    void capacityFreed(SubscriptionRunner runner) {
        if (budget.limited()) {
            wakeAll();
        } else {
            runner.tryGrant();
        }
    }

    // ------------------------------------------------------------------ shutdown and health

    /**
     * @param timeout how long to wait for running handlers
     * @return whether every handler finished in time
     */
    public synchronized boolean close(Duration timeout) {
        if (closeResult != null) {
            return closeResult;
        }
        state = State.STOPPING;
        gate.shutdown();
        long deadline = System.nanoTime() + timeout.toNanos();
        for (SubscriptionRunner r : runners) {
            r.stopIntake();
        }
        boolean done = true;
        for (SubscriptionRunner r : runners) {
            done &= r.awaitHandlers(deadline);
        }
        closeQuietly();
        connected = false;
        state = State.STOPPED;
        closeResult = done;
        LOG.info("Consumer '{}' stopped{}", config.name(), done ? "" : " (some handlers were still running)");
        return done;
    }

    private void closeQuietly() {
        for (SubscriptionRunner r : runners) {
            r.closeLink();
        }
        for (Session s : sessions) {
            try {
                s.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing a session failed: {}", Errors.describe(e));
            }
        }
        if (connection != null) {
            try {
                connection.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing the connection failed: {}", Errors.describe(e));
            }
        }
        if (client != null) {
            try {
                client.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing the client failed: {}", Errors.describe(e));
            }
        }
        scheduler.shutdownNow();
    }

    /** @return a snapshot */
    public ConsumerHealth health() {
        List<SubscriptionHealth> subs = new ArrayList<>();
        String error = lastError;
        for (SubscriptionRunner r : runners) {
            subs.add(r.health());
            if (error == null && r.lastError() != null) {
                error = r.lastError();
            }
        }
        if (!gate.reachable() && gate.lastError() != null) {
            error = gate.lastError();
        }
        return new ConsumerHealth(state, connected, gate.reachable(), gate.paused(), error, subs);
    }

    // ------------------------------------------------------------------ shared services for runners

    /** @return the consumer name */
    public String name() {
        return config.name();
    }

    /** @return how long close() waits by default */
    public Duration shutdownTimeout() {
        return config.shutdownTimeout();
    }

    RuntimeConfig config() {
        return config;
    }

    ConsumerObserver observer() {
        return observer;
    }

    boolean connected() {
        return connected;
    }

    StoreAccess store() {
        return store;
    }

    StoreGate gate() {
        return gate;
    }

    SharedBudget budget() {
        return budget;
    }

    long connectionGeneration() {
        return connectionGeneration.get();
    }

    ScheduledFuture<?> schedule(Runnable task, Duration delay) {
        return scheduler.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
    }

    ScheduledFuture<?> scheduleAtFixedRate(Runnable task, long periodMillis) {
        return heartbeats.scheduleAtFixedRate(task, Duration.ofMillis(periodMillis));
    }

    /** Waits without holding anything; used between confirm retries on a worker thread. */
    void pause(Duration delay) {
        LockSupport.parkNanos(delay.toNanos());
    }
}

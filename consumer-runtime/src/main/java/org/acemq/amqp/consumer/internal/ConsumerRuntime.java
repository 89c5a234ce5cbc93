package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.ConsumerHealth.State;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionSecurityException;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer: its connection ({@link Connector}), one {@link Subscriber} per subscription, the credit allocator they
 * share, the store gate, and the threads for delayed and blocking work: the {@link Scheduler} (timing) and one control
 * thread (attaching, re-attaching, and without engine hooks, granting credit).
 */
public final class ConsumerRuntime {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerRuntime.class);

    private final RuntimeConfig config;
    private final SafeObserver observer;
    private final StoreAccess store;
    private final StoreGate gate;
    private final CreditAllocator allocator;
    private final EngineHooks hooks = EngineHooks.get();
    private final Ticker ticker;
    private final Scheduler scheduler;
    private final ScheduledThreadPoolExecutor ownScheduler;
    private final ExecutorService control;
    private final LeaseHeartbeats heartbeats;
    private final List<Subscriber> subscribers = new ArrayList<>();
    private final Map<String, SessionHandle> sessions = new LinkedHashMap<>();
    private final Connector connector;
    private volatile BrokerProfile profile = BrokerProfile.unknown();
    private volatile State state = State.STARTING;
    private Boolean closeResult;

    /** @param config validated settings */
    public ConsumerRuntime(RuntimeConfig config) {
        this.config = config;
        this.observer = new SafeObserver(config.observer());
        this.ticker = config.ticker();
        if (config.scheduler() == null) {
            AtomicInteger threads = new AtomicInteger();
            ownScheduler = new ScheduledThreadPoolExecutor(2,
                    r -> daemon(r, "-scheduler-" + threads.incrementAndGet()));
            ownScheduler.setRemoveOnCancelPolicy(true);
            scheduler = (task, delay) -> ownScheduler.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
        } else {
            ownScheduler = null;
            scheduler = config.scheduler();
        }
        this.control = Executors.newSingleThreadExecutor(r -> daemon(r, "-control"));
        this.store = new StoreAccess(config.store(), observer, ticker);
        this.allocator = new CreditAllocator(config.maxInFlightPerConnection());
        this.gate = new StoreGate(store, config.storeFailurePolicy(), observer, scheduler, config.storeRetryDelay(),
                config.maxStoreRetryDelay(), allocator::pause, allocator::resume);
        this.heartbeats = store.lease() == null ? null : new LeaseHeartbeats(store, scheduler, ticker, store.lease());
        this.connector = new Connector(this);
        for (Subscription spec : config.subscriptions()) {
            String group = spec.sessionGroup() != null ? "group:" + spec.sessionGroup() : "subscription:" + spec.name();
            SessionHandle session = sessions.computeIfAbsent(group, g -> new SessionHandle(g, config.connection()));
            subscribers.add(new Subscriber(this, spec, session));
        }
    }

    private Thread daemon(Runnable r, String suffix) {
        Thread t = new Thread(r, config.name() + suffix);
        t.setDaemon(true);
        return t;
    }

    /**
     * Starts consuming. With {@code failFastStart} it connects and attaches every subscription before it returns, and
     * throws (having closed what it opened) if it cannot; otherwise it returns at once while the first connection is
     * tried with back-off, and {@link #health()} says how far it got.
     */
    public void start() {
        for (Subscriber s : subscribers) {
            s.startThreads();
            if (heartbeats != null) {
                heartbeats.watch(s.threads());
            }
        }
        if (heartbeats != null) {
            heartbeats.start();
        }
        if (!hooks.available()) {
            scheduleCreditCheck();
        }
        if (!config.failFastStart()) {
            connector.startInBackground();
            return;
        }
        try {
            connector.connect(true);
        } catch (ClientException | ExecutionException | TimeoutException | RuntimeException e) {
            String what = "cannot start consumer '" + config.name() + "' on " + config.connection().host() + ":"
                    + config.connection().port() + ": " + Errors.describe(e);
            close(Duration.ofSeconds(1)); // no handler has run: the threads only need to notice the stop
            state = State.FAILED;
            throw new AcemqException(what, Errors.unwrap(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close(Duration.ofSeconds(1));
            state = State.FAILED;
            throw new AcemqException("interrupted while starting consumer '" + config.name() + "'", e);
        }
    }

    /** Connected: the broker's identity is known; attach everything (see {@link Connector}). */
    void connected(BrokerProfile brokerProfile, org.apache.qpid.protonj2.client.Connection connection,
                   boolean failFast) throws ClientException {
        profile = brokerProfile;
        allocator.brokerDrains(brokerProfile.drainPerSpec());
        for (SessionHandle s : sessions.values()) {
            s.connection(connection);
        }
        // A store that is down at start-up pauses the consumer from the first moment: no credit, no loss.
        try {
            store.probe();
        } catch (RuntimeException e) {
            gate.failure(e);
        }
        for (Subscriber s : subscribers) {
            if (s.suspended()) {
                continue; // stopped by the application: attached when it is started again
            }
            try {
                s.attach();
            } catch (ClientException | RuntimeException e) {
                if (failFast) {
                    throw e;
                }
                s.attachLater(e);
            }
        }
        if (state == State.STARTING) {
            state = State.RUNNING;
        }
        LOG.info("Consumer '{}' started: {} subscription(s) on {}:{} ({})", config.name(), subscribers.size(),
                config.connection().host(), config.connection().port(), brokerProfile);
    }

    private void scheduleCreditCheck() {
        later(() -> {
            if (state == State.STOPPING || state == State.STOPPED) {
                return;
            }
            if (profile.drainPerSpec() && !allocator.paused()) {
                for (Subscriber s : subscribers) {
                    s.credit().check();
                }
            }
            scheduleCreditCheck();
        }, config.creditCheckInterval());
    }

    // ------------------------------------------------------------------ connection events (from the Connector)

    void interrupted(Throwable cause, boolean first) {
        if (first && profile.drainAnsweredAgainstSpec(cause)) {
            allocator.brokerDrains(false);
        }
        if (first) {
            observer.connectionInterrupted(true);
        }
        for (Subscriber s : subscribers) {
            s.connectionInterrupted(first);
        }
    }

    void reconnected(BrokerProfile brokerProfile) {
        if (!brokerProfile.toString().equals(profile.toString())) {
            profile = brokerProfile; // failed over to another broker
            allocator.brokerDrains(brokerProfile.drainPerSpec());
        }
        observer.connectionInterrupted(false);
        for (Subscriber s : subscribers) {
            s.connectionRestored();
        }
    }

    /** The connection is gone for good (reconnect gave up, was refused, or is off). */
    void connectionFailed(Throwable cause) {
        connector.failed(cause);
    }

    void failed() {
        if (state != State.STOPPING && state != State.STOPPED) {
            state = State.FAILED;
        }
    }

    State state() {
        return state;
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
        allocator.stop();
        gate.shutdown();
        connector.stopRetrying();
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Subscriber s : subscribers) {
            s.stopIntake();
        }
        boolean done = true;
        for (Subscriber s : subscribers) {
            done &= s.awaitHandlers(deadline);
        }
        if (heartbeats != null) {
            heartbeats.stop();
        }
        for (Subscriber s : subscribers) {
            s.closeLink();
        }
        for (SessionHandle s : sessions.values()) {
            s.close();
        }
        connector.close();
        control.shutdownNow();
        if (ownScheduler != null) {
            ownScheduler.shutdownNow();
        }
        state = State.STOPPED;
        closeResult = done;
        LOG.info("Consumer '{}' stopped{}", config.name(), done ? "" : " (some handlers were still running)");
        return done;
    }

    /** @return a snapshot */
    public ConsumerHealth health() {
        List<SubscriptionHealth> subs = new ArrayList<>();
        boolean connected = connector.connected();
        String error = connector.lastError();
        for (Subscriber s : subscribers) {
            subs.add(s.health(connected));
            if (error == null && s.lastError() != null) {
                error = s.lastError();
            }
        }
        if (!gate.reachable() && gate.lastError() != null) {
            error = gate.lastError();
        }
        return new ConsumerHealth(state, connected, gate.reachable(), gate.paused(), error, subs);
    }

    // ------------------------------------------------------------------ per-subscription lifecycle

    /** @return the names of the subscriptions, in order */
    public List<String> subscriptionNames() {
        List<String> names = new ArrayList<>();
        for (Subscriber s : subscribers) {
            names.add(s.name);
        }
        return names;
    }

    /** @param name a subscription name @return whether there is one of that name */
    public boolean hasSubscription(String name) {
        return find(name) != null;
    }

    private Subscriber subscriber(String name) {
        Subscriber s = find(name);
        if (s == null) {
            throw new IllegalArgumentException("no subscription named '" + name + "'");
        }
        return s;
    }

    private Subscriber find(String name) {
        for (Subscriber s : subscribers) {
            if (s.name.equals(name)) {
                return s;
            }
        }
        return null;
    }

    private void requireOpen(String what) {
        if (state == State.STOPPING || state == State.STOPPED) {
            throw new IllegalStateException("cannot " + what + ": consumer '" + config.name() + "' is closed");
        }
    }

    /** @param name the subscription to pause */
    public void pause(String name) {
        requireOpen("pause '" + name + "'");
        subscriber(name).pause();
    }

    /** @param name the subscription to resume */
    public void resume(String name) {
        requireOpen("resume '" + name + "'");
        subscriber(name).resume();
    }

    /** @param name a subscription @return whether the application paused it */
    public boolean paused(String name) {
        return subscriber(name).paused();
    }

    /**
     * @param name the subscription to stop
     * @param timeout how long to wait for its running handlers
     * @return whether they finished in time
     */
    public boolean suspend(String name, Duration timeout) {
        requireOpen("stop '" + name + "'");
        return subscriber(name).suspend(timeout);
    }

    /** @param name the subscription to start again */
    public void unsuspend(String name) {
        requireOpen("start '" + name + "'");
        subscriber(name).unsuspend();
    }

    /** @param name a subscription @return whether the application stopped it */
    public boolean suspended(String name) {
        return subscriber(name).suspended();
    }

    // ------------------------------------------------------------------ shared services

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

    SafeObserver observer() {
        return observer;
    }

    StoreAccess store() {
        return store;
    }

    StoreGate gate() {
        return gate;
    }

    CreditAllocator allocator() {
        return allocator;
    }

    EngineHooks hooks() {
        return hooks;
    }

    BrokerProfile profile() {
        return profile;
    }

    Ticker ticker() {
        return ticker;
    }

    Scheduler scheduler() {
        return scheduler;
    }

    ExecutorService control() {
        return control;
    }

    DoubleSupplier jitter() {
        return () -> ThreadLocalRandom.current().nextDouble();
    }

    long leasePeriodNanos() {
        return heartbeats == null ? 0 : heartbeats.periodNanos();
    }

    /** Runs {@code task} on the control thread after {@code delay} (nothing once the consumer is closed). */
    void later(Runnable task, Duration delay) {
        try {
            scheduler.schedule(() -> {
                try {
                    control.execute(task);
                } catch (RejectedExecutionException e) {
                    LOG.debug("Not run: the consumer is closed");
                }
            }, delay);
        } catch (RejectedExecutionException e) {
            LOG.debug("Not scheduled: the consumer is closed");
        }
    }

    /** @param cause a connection failure @return whether retrying cannot help (credentials, TLS) */
    static boolean permanent(Throwable cause) {
        return Errors.unwrap(cause) instanceof ClientConnectionSecurityException;
    }
}

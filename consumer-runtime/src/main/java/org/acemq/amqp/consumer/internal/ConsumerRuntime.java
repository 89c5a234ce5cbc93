package org.acemq.amqp.consumer.internal;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.ConsumerHealth.State;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer: its connection ({@link Connector}), one {@link Subscriber} per subscription (each over its
 * {@link Pipeline}), the credit allocator they share, the store gate, and the threads for delayed and blocking work
 * ({@link Control}). It wires them once, each with the collaborators it uses, and hears the connection's events.
 */
public final class ConsumerRuntime {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerRuntime.class);

    private final RuntimeConfig config;
    private final SafeObserver observer;
    private final StoreAccess store;
    private final StoreGate gate;
    private final CreditAllocator allocator;
    private final ProtonInternals internals = ProtonInternals.forConsumer();
    private final CurrentBroker broker = new CurrentBroker();
    private final Control control;
    private final LeaseHeartbeats heartbeats;
    private final List<Subscriber> subscribers = new ArrayList<>();
    private final Map<String, SessionHandle> sessions = new LinkedHashMap<>();
    private final Connector connector;
    private final Senders senders;
    /** The consumer's view of the store's outbox and its sweep; null when the store keeps no outbox. */
    private final OutboxState outboxState;
    private final OutboxSweep outboxSweep;
    /** Dispatches what handlers' transactions committed to the outbox; null when the store keeps no outbox. */
    private final OutboxRelay outboxRelay;
    private final ConsumerState state = new ConsumerState();
    /**
     * How long messages the broker accepted from the outbox wait for their dispatched mark, so that one mark (one
     * commit) serves the many sent meanwhile; far below the sweep's minimum age, so the sweep does not take them.
     */
    static final Duration OUTBOX_MARK_DELAY = Duration.ofMillis(250);
    private Boolean closeResult;

    /** @param config validated settings */
    public ConsumerRuntime(RuntimeConfig config) {
        this.config = config;
        this.observer = new SafeObserver(config.observer());
        this.control = new Control(config.name(), config.scheduler());
        this.store = new StoreAccess(config.store(), observer, config.ticker());
        this.allocator = new CreditAllocator(config.maxInFlightPerConnection());
        this.gate = new StoreGate(store, config.storeFailurePolicy(), observer, control.scheduler(),
                config.storeRetryDelay(), config.maxStoreRetryDelay(), allocator::pause, allocator::resume);
        this.heartbeats = store.lease() == null ? null
                : new LeaseHeartbeats(store, control.scheduler(), config.ticker(), store.lease());
        this.connector = new Connector(config, control, observer, broker, new ConnectionEvents(config, state, broker,
                allocator, store, gate, observer, sessions.values(), subscribers, this::connected));
        long leasePeriodNanos = heartbeats == null ? 0 : heartbeats.periodNanos();
        SessionHandle sending = new SessionHandle("senders", config.connection());
        sessions.put("senders", sending);
        this.senders = new Senders(sending, config.connection().requestTimeout(), observer, config.ticker());
        OutboxStore outbox = store.outbox();
        if (outbox != null) {
            this.outboxState = new OutboxState(config.ticker(), Clock.systemUTC(), config.outboxMaxAge());
            OutboxDispatcher dispatcher = new OutboxDispatcher(outbox, senders, outboxState);
            this.outboxSweep = new OutboxSweep(config.name(), outbox, dispatcher, outboxState, control.scheduler(),
                    config.ticker(), connector::connected, config.outboxSweepInterval(), config.outboxSweepMinAge());
            this.outboxRelay = new OutboxRelay(config.name(), outbox, dispatcher, connector::connected,
                    config.connection().requestTimeout(), OUTBOX_MARK_DELAY);
        } else {
            this.outboxState = null;
            this.outboxSweep = null;
            this.outboxRelay = null;
        }
        for (Subscription spec : config.subscriptions()) {
            String group = spec.sessionGroup() != null ? "group:" + spec.sessionGroup() : "subscription:" + spec.name();
            SessionHandle session = sessions.computeIfAbsent(group, g -> new SessionHandle(g, config.connection()));
            Pipeline pipeline = Pipeline.create(spec, config, session, observer, store, gate, allocator, control, broker,
                    internals, new Sends(spec.name(), senders, outbox, outboxState, outboxRelay,
                            spec.acknowledgementMode() == AcknowledgementMode.TRANSACTIONAL),
                    leasePeriodNanos, connector::failed);
            subscribers.add(new Subscriber(spec, pipeline, allocator, broker, config.ticker(),
                    config.connection().requestTimeout()));
        }
    }

    /**
     * Starts consuming. With {@code failFastStart} it connects and attaches every subscription before it returns, and
     * throws (having closed what it opened) if it cannot; otherwise it returns at once while the first connection is
     * tried with back-off, and {@link #health()} says how far it got.
     */
    public void start() {
        for (int i = 0; i < subscribers.size(); i++) {
            Subscriber s = subscribers.get(i);
            try {
                s.startThreads(config.name(), config.subscriptions().get(i).handlerExecutor().orElse(null));
            } catch (RuntimeException e) {
                close(Duration.ofSeconds(1)); // the loops started so far only need to notice the stop
                state.set(State.FAILED);
                throw new AcemqException("cannot start consumer '" + config.name() + "': " + e.getMessage(), e);
            }
            if (heartbeats != null) {
                heartbeats.watch(s.pipeline());
            }
        }
        if (heartbeats != null) {
            heartbeats.start();
        }
        if (outboxRelay != null) {
            outboxRelay.start();
        }
        if (outboxSweep != null) {
            outboxSweep.start();
        }
        if (!internals.hooksAvailable()) {
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
                    + config.connection().port() + ": " + ConnectionFailures.describe(e, config.connection());
            close(Duration.ofSeconds(1)); // no handler has run: the threads only need to notice the stop
            state.set(State.FAILED);
            throw new AcemqException(what, Errors.unwrap(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close(Duration.ofSeconds(1));
            state.set(State.FAILED);
            throw new AcemqException("interrupted while starting consumer '" + config.name() + "'", e);
        }
    }

    /** The connection came up (the first time, or again): the outbox sweep runs now. */
    private void connected() {
        if (outboxSweep != null) {
            outboxSweep.soon();
        }
    }

    private void scheduleCreditCheck() {
        control.later(() -> {
            if (state.closing()) {
                return;
            }
            if (broker.profile().drainPerSpec() && !allocator.paused()) {
                for (Subscriber s : subscribers) {
                    s.links().credit().check();
                }
            }
            scheduleCreditCheck();
        }, config.creditCheckInterval());
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
        state.set(State.STOPPING);
        allocator.stop();
        gate.shutdown();
        connector.stopRetrying();
        if (outboxSweep != null) {
            outboxSweep.stop();
        }
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
        if (outboxRelay != null) {
            // what handlers committed goes out before the connection closes, within the connection's request timeout
            outboxRelay.close(Math.max(deadline, System.nanoTime() + config.connection().requestTimeout().toNanos()));
        }
        for (Subscriber s : subscribers) {
            s.closeLink();
        }
        if (outboxSweep != null && !outboxSweep.awaitIdle(Math.max(deadline, System.nanoTime()
                + config.connection().requestTimeout().toNanos()))) {
            LOG.warn("Consumer '{}': the outbox sweep was still sending; what it had not sent stays in the outbox",
                    config.name());
        }
        senders.close();
        for (SessionHandle s : sessions.values()) {
            s.close();
        }
        connector.close();
        control.shutdown();
        state.set(State.STOPPED);
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
        return new ConsumerHealth(state.get(), connected, gate.reachable(), gate.paused(), error, subs,
                outboxState == null ? null : outboxState.health());
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
        return subscriptionNames().contains(name);
    }

    private Subscriber subscriber(String name) {
        return subscribers.stream().filter(s -> s.name.equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no subscription named '" + name + "'"));
    }

    /** @return the subscription, if the consumer is open */
    private Subscriber open(String name, String what) {
        if (state.closing()) {
            throw new IllegalStateException("cannot " + what + " '" + name + "': consumer '" + config.name()
                    + "' is closed");
        }
        return subscriber(name);
    }

    /** @param name the subscription to pause */
    public void pause(String name) {
        open(name, "pause").pause();
    }

    /** @param name the subscription to resume */
    public void resume(String name) {
        open(name, "resume").resume();
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
        return open(name, "stop").suspend(timeout);
    }

    /** @param name the subscription to start again */
    public void unsuspend(String name) {
        open(name, "start").unsuspend();
    }

    /** @param name a subscription @return whether the application stopped it */
    public boolean suspended(String name) {
        return subscriber(name).suspended();
    }

    // ------------------------------------------------------------------ names

    /** @return the consumer name */
    public String name() {
        return config.name();
    }

    /** @return how long close() waits by default */
    public Duration shutdownTimeout() {
        return config.shutdownTimeout();
    }
}

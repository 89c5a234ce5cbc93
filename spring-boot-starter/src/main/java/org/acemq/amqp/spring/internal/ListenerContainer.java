package org.acemq.amqp.spring.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.spring.AcemqConsumerCustomizer;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.acemq.amqp.spring.AcemqListenerRegistry;
import org.acemq.amqp.spring.AcemqProperties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.core.Ordered;

/**
 * Runs every {@code @AcemqListener} on one {@link AmqpConsumer} per connection in use (the listener's
 * {@code connection}: {@code default}, or a name of {@code acemq.connections}): builds them from the properties, the
 * one store, the listeners and the observer binding on {@link #start()}, closes them gracefully (together) on
 * {@link #stop()}.
 *
 * <p>When its context closes it stops on the {@link ContextClosedEvent}, ahead of the lifecycle processor: Boot closes
 * the application's {@code MeterRegistry} beans on that same event (its {@code MeterRegistryCloser}, which has no
 * order), and a closed registry registers no new meter, so the settlements made while the consumer closes (the
 * deliveries released at shutdown, the running handlers' outcomes) would go uncounted if the container waited for
 * its lifecycle phase. This listener is ordered first ({@link #CLOSE_ORDER}).
 */
final class ListenerContainer implements AcemqListenerContainer, SmartInitializingSingleton,
        ApplicationListener<ContextClosedEvent>, ApplicationContextAware, Ordered {

    /** The order of the container's {@link ContextClosedEvent} listener: before every unordered one. */
    static final int CLOSE_ORDER = Ordered.HIGHEST_PRECEDENCE + 100;

    private static final Logger LOG = LoggerFactory.getLogger(ListenerContainer.class);

    /** Hooks an observer (Micrometer) into each consumer; optional. */
    interface ObserverBinding {
        /**
         * @param builder the builder of the consumer of one connection
         * @param connection the connection's name
         * @return what to do with that consumer once started (bind its gauges)
         */
        java.util.function.Consumer<AmqpConsumer> configure(AmqpConsumer.Builder builder, String connection);
    }

    /** Makes a transactional handler around a listener; present only with spring-tx and spring-jdbc. */
    interface TransactionalHandlers {
        MessageHandler wrap(MessageHandler listener, IdempotencyStore store, String transactionManager,
                String description);

        BatchHandler wrapBatch(BatchHandler listener, IdempotencyStore store, String transactionManager,
                String description);
    }

    private final AcemqProperties properties;
    private final ListenerAnnotationProcessor listeners;
    private final Supplier<IdempotencyStore> store;
    private final ListenerMethods methods;
    private final ConnectionSettingsSource connection;
    private final ObserverBinding observerBinding;
    private final TransactionalHandlers transactionalHandlers;
    private final List<AcemqConsumerCustomizer> customizers;
    private final ListenerSettings.ListenerBeans beans;
    private final Object lock = new Object();
    /** The running consumers by connection, in the order they started; empty while stopped. */
    private volatile Map<String, AmqpConsumer> consumers = Map.of();
    private volatile ApplicationContext context;
    private final ListenerRegistry registry = new ListenerRegistry(c -> consumers.get(c), this);

    /** Supplies a connection's settings at start (SSL bundles are resolved then). */
    interface ConnectionSettingsSource {
        /**
         * @param connection a connection's name, one of {@link ConsumerSettings#connectionNames}
         * @return its settings
         */
        ConnectionSettings get(String connection);
    }

    ListenerContainer(AcemqProperties properties, ListenerAnnotationProcessor listeners,
            Supplier<IdempotencyStore> store, ListenerMethods methods, ConnectionSettingsSource connection,
            ObserverBinding observerBinding, TransactionalHandlers transactionalHandlers,
            List<AcemqConsumerCustomizer> customizers) {
        this(properties, listeners, store, methods, connection, observerBinding, transactionalHandlers, customizers,
                ListenerSettings.ListenerBeans.NONE);
    }

    ListenerContainer(AcemqProperties properties, ListenerAnnotationProcessor listeners,
            Supplier<IdempotencyStore> store, ListenerMethods methods, ConnectionSettingsSource connection,
            ObserverBinding observerBinding, TransactionalHandlers transactionalHandlers,
            List<AcemqConsumerCustomizer> customizers, ListenerSettings.ListenerBeans beans) {
        this.beans = beans;
        this.properties = properties;
        this.listeners = listeners;
        this.store = store;
        this.methods = methods;
        this.connection = connection;
        this.observerBinding = observerBinding;
        this.transactionalHandlers = transactionalHandlers;
        this.customizers = List.copyOf(customizers);
    }

    /** Checks every listener's settings when the context is ready, also when the container is not started. */
    @Override
    public void afterSingletonsInstantiated() {
        subscriptions();
    }

    /** @return the registry of this container's listeners */
    AcemqListenerRegistry registry() {
        return registry;
    }

    @Override
    public void start() {
        synchronized (lock) {
            if (!consumers.isEmpty()) {
                return;
            }
            Map<String, List<Subscription>> byConnection = subscriptionsByConnection();
            if (byConnection.isEmpty()) {
                LOG.info("No @AcemqListener methods found; the AceMQ consumer is not started");
                return;
            }
            IdempotencyStore idempotencyStore = store.get();
            Map<String, AmqpConsumer> started = new LinkedHashMap<>();
            try {
                for (Map.Entry<String, List<Subscription>> e : byConnection.entrySet()) {
                    started.put(e.getKey(), start(e.getKey(), e.getValue(), idempotencyStore));
                }
            } catch (RuntimeException | Error e) {
                // one connection failed to start (fail-fast-start, or a customizer): none runs
                started.values().forEach(c -> c.close(java.time.Duration.ZERO));
                throw e;
            }
            consumers = java.util.Collections.unmodifiableMap(started);
            registry.started();
        }
    }

    private AmqpConsumer start(String connectionName, List<Subscription> subscriptions,
            IdempotencyStore idempotencyStore) {
        AmqpConsumer.Builder builder = AmqpConsumer.builder()
                .connection(connection.get(connectionName))
                .store(idempotencyStore);
        ConsumerSettings.applyTo(properties.getConsumer(), connectionName, builder);
        for (Subscription s : subscriptions) {
            builder.subscribe(s);
        }
        java.util.function.Consumer<AmqpConsumer> bind = observerBinding == null ? c -> { }
                : observerBinding.configure(builder, connectionName);
        customizers.forEach(c -> c.customize(connectionName, builder));
        AmqpConsumer started = builder.start();
        bind.accept(started);
        LOG.info("AceMQ consumer started on connection '{}' with {} listener(s) on {}", connectionName,
                subscriptions.size(), describe(subscriptions));
        return started;
    }

    /**
     * @return the subscriptions of every listener by connection name (in the order the connections are first named),
     *     validated as {@link #subscriptions()} does
     */
    Map<String, List<Subscription>> subscriptionsByConnection() {
        Map<String, List<Subscription>> out = new LinkedHashMap<>();
        Map<String, ListenerRegistry.Entry> entries = registry.entries();
        for (Subscription s : subscriptions()) {
            out.computeIfAbsent(entries.values().stream().filter(e -> e.name.equals(s.name())).findFirst()
                    .map(e -> e.connection).orElseThrow(), k -> new ArrayList<>()).add(s);
        }
        return out;
    }

    /**
     * @return the subscriptions of every listener, validated; property keys naming no listener fail, and so do two
     *     listeners with one id, and a listener naming a connection that is not configured; the registry knows the
     *     listeners from then on
     */
    List<Subscription> subscriptions() {
        List<ListenerEndpoint> endpoints = listeners.endpoints();
        Map<String, ListenerSettings> settings = new LinkedHashMap<>();
        Map<String, String> sources = new LinkedHashMap<>();
        Map<String, Object> handlers = new LinkedHashMap<>();
        List<Subscription> out = new ArrayList<>();
        IdempotencyStore idempotencyStore = null;
        java.util.Set<String> connectionNames = ConsumerSettings.connectionNames(properties);
        for (ListenerEndpoint endpoint : endpoints) {
            String name = listenerName(endpoint);
            AcemqProperties.Listener props = properties.getListeners().getOrDefault(name,
                    new AcemqProperties.Listener());
            ListenerSettings s = new ListenerSettings(name, endpoint.describe(), endpoint.attributes(),
                    endpoint.permanentFailures(), props);
            boolean batch = s.batch();
            ListenerMethod invoker = null;
            BatchListenerMethod batchInvoker = null;
            if (batch) {
                batchInvoker = methods.createBatch(endpoint);
                s.payload(batchInvoker::payload);
            } else {
                invoker = methods.create(endpoint);
                s.payload(invoker::payload);
            }
            if (settings.put(name, s) != null) {
                throw new IllegalStateException("Two @AcemqListener methods are named '" + name + "' (the second is "
                        + endpoint.describe() + "); give one of them another name");
            }
            if (!connectionNames.contains(s.connection())) {
                throw new IllegalStateException("AceMQ listener '" + name + "' (" + endpoint.describe() + "): "
                        + ConsumerSettings.unknownConnection(properties, s.connection()));
            }
            s.beans(beans);
            sources.put(name, endpoint.describe());
            String described = "'" + name + "' (" + endpoint.describe() + ")";
            if (s.databaseTransaction()) {
                if (transactionalHandlers == null) {
                    throw new IllegalStateException("AceMQ listener " + described + " has databaseTransaction, which "
                            + "needs spring-jdbc and spring-tx on the class path (spring-boot-starter-jdbc)");
                }
                if (idempotencyStore == null) {
                    idempotencyStore = store.get();
                }
                handlers.put(name, batch
                        ? transactionalHandlers.wrapBatch(batchInvoker, idempotencyStore, s.transactionManager(),
                                described)
                        : transactionalHandlers.wrap(invoker, idempotencyStore, s.transactionManager(), described));
            } else {
                handlers.put(name, batch ? batchInvoker : invoker);
            }
        }
        Map<String, ListenerRegistry.Entry> entries = registry.plan(settings, sources,
                properties.getConsumer().getIdleEventInterval());
        for (ListenerRegistry.Entry e : entries.values()) {
            Object handler = handlers.get(e.name);
            out.add(handler instanceof BatchHandler batchHandler
                    ? settings.get(e.name).buildBatch(e.track(batchHandler))
                    : settings.get(e.name).build(e.track((MessageHandler) handler)));
        }
        registry.use(entries);
        Set<String> unknown = new TreeSet<>(properties.getListeners().keySet());
        unknown.removeAll(settings.keySet());
        if (!unknown.isEmpty()) {
            throw new IllegalStateException("acemq.listeners." + unknown.iterator().next() + " configures no "
                    + "@AcemqListener; the listeners are " + settings.keySet());
        }
        return out;
    }

    private static String listenerName(ListenerEndpoint endpoint) {
        String name = endpoint.attributes().get("name");
        if (name == null) {
            name = endpoint.attributes().get("address");
        }
        if (name == null) {
            throw new IllegalStateException("@AcemqListener on " + endpoint.describe() + " has neither an address "
                    + "nor a name; give it an address (or a name and acemq.listeners.<name>.address)");
        }
        return name;
    }

    private static String describe(List<Subscription> subscriptions) {
        StringBuilder b = new StringBuilder();
        for (Subscription s : subscriptions) {
            b.append(b.length() == 0 ? "" : ", ").append(s.name()).append(" <- ").append(s.address());
        }
        return b.toString();
    }

    @Override
    public void stop() {
        synchronized (lock) {
            Map<String, AmqpConsumer> running = consumers;
            if (running.isEmpty()) {
                return;
            }
            registry.stopping();
            // close while still "running": the health contributor shows STOPPING, not NOT_STARTED. The consumers close
            // together, so that stopping takes one acemq.consumer.shutdown-timeout at most, not one per connection.
            java.time.Duration configured = properties.getConsumer().getShutdownTimeout();
            java.time.Duration timeout = configured != null ? configured : AmqpConsumer.DEFAULT_SHUTDOWN_TIMEOUT;
            Map<String, java.util.concurrent.CompletableFuture<Boolean>> closing = new LinkedHashMap<>();
            running.forEach((name, c) -> {
                if (running.size() == 1) {
                    closing.put(name, java.util.concurrent.CompletableFuture.completedFuture(c.close(timeout)));
                } else {
                    java.util.concurrent.CompletableFuture<Boolean> f = new java.util.concurrent.CompletableFuture<>();
                    Thread t = new Thread(() -> {
                        try {
                            f.complete(c.close(timeout));
                        } catch (Throwable e) {
                            f.completeExceptionally(e);
                        }
                    }, "acemq-close-" + name);
                    t.start();
                    closing.put(name, f);
                }
            });
            closing.forEach((name, f) -> {
                boolean finished;
                try {
                    finished = f.join();
                } catch (java.util.concurrent.CompletionException e) {
                    LOG.warn("Closing the AceMQ consumer of connection '{}' failed: {}", name, e.getCause().toString());
                    finished = false;
                }
                if (!finished) {
                    LOG.warn("AceMQ consumer of connection '{}' stopped before every handler finished "
                            + "(acemq.consumer.shutdown-timeout); their deliveries go back to the broker", name);
                }
            });
            consumers = Map.of();
        }
    }

    @Override
    public void setApplicationContext(ApplicationContext applicationContext) {
        this.context = applicationContext;
        registry.publisher(applicationContext::publishEvent);
    }

    /** Stops when this container's own context closes (a child context's event reaches the parent's listeners too). */
    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
        if (event.getApplicationContext() == context) {
            stop();
        }
    }

    @Override
    public int getOrder() {
        return CLOSE_ORDER;
    }

    @Override
    public void stop(Runnable callback) {
        // synchronous: the lifecycle processor waits for this call before it moves to lower phases and destroys
        // beans, so the DataSource and whatever else the handlers use outlive every running handler
        try {
            stop();
        } finally {
            callback.run();
        }
    }

    @Override
    public boolean isRunning() {
        return !consumers.isEmpty();
    }

    @Override
    public boolean isAutoStartup() {
        return properties.getConsumer().isAutoStartup();
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    @Override
    public Optional<AmqpConsumer> consumer() {
        Map<String, AmqpConsumer> running = consumers;
        AmqpConsumer c = running.get(AcemqProperties.DEFAULT_CONNECTION);
        return Optional.ofNullable(c != null ? c : running.values().stream().findFirst().orElse(null));
    }

    @Override
    public Map<String, AmqpConsumer> consumers() {
        return consumers;
    }
}

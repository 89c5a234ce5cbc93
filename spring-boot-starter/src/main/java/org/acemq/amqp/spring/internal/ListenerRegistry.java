package org.acemq.amqp.spring.internal;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.SubscriptionControl;
import org.acemq.amqp.spring.AcemqConsumerConnectionEvent;
import org.acemq.amqp.spring.AcemqListenerHandle;
import org.acemq.amqp.spring.AcemqListenerIdleEvent;
import org.acemq.amqp.spring.AcemqListenerPausedEvent;
import org.acemq.amqp.spring.AcemqListenerRegistry;
import org.acemq.amqp.spring.AcemqListenerResumedEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEvent;

/**
 * The listeners of a {@link ListenerContainer} by id, their handles, and the events about them: paused and resumed
 * (published by the handles), idle and connected / disconnected (noticed by a monitor thread that runs while the
 * container does).
 */
final class ListenerRegistry implements AcemqListenerRegistry {

    private static final Logger LOG = LoggerFactory.getLogger(ListenerRegistry.class);
    private static final long MAX_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    private static final long MIN_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final Function<String, AmqpConsumer> consumers;
    private final Object source;
    private volatile Map<String, Entry> entries = Map.of();
    private volatile Consumer<ApplicationEvent> publisher = e -> { };
    private ScheduledExecutorService monitor;
    /** Per connection in use: whether it was connected at the last check. */
    private final Map<String, Boolean> connected = new LinkedHashMap<>();

    /**
     * @param consumers the container's running consumer of a connection, or null
     * @param source the source of connection events (the container)
     */
    ListenerRegistry(Function<String, AmqpConsumer> consumers, Object source) {
        this.consumers = consumers;
        this.source = source;
    }

    void publisher(Consumer<ApplicationEvent> publisher) {
        this.publisher = publisher;
    }

    /**
     * @param settings every listener's settings, in order
     * @return the entries by id; the same entry objects as before for ids already known
     * @throws IllegalStateException if two listeners have one id
     */
    Map<String, Entry> plan(Map<String, ListenerSettings> settings, Map<String, String> sources,
            Duration defaultIdle) {
        Map<String, Entry> next = new LinkedHashMap<>();
        for (ListenerSettings s : settings.values()) {
            String id = s.id();
            Entry known = entries.get(id);
            Entry e = known != null && known.name.equals(s.name()) && known.connection.equals(s.connection()) ? known
                    : new Entry(id, s.name(), s.connection(), s.idleEventInterval(defaultIdle));
            Entry clash = next.put(id, e);
            if (clash != null) {
                throw new IllegalStateException("Two @AcemqListener methods have the id '" + id + "' ("
                        + sources.get(clash.name) + " and " + sources.get(s.name()) + "); give one of them another "
                        + "id (the id defaults to the listener's name, or its address)");
            }
        }
        return next;
    }

    void use(Map<String, Entry> planned) {
        this.entries = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(planned));
    }

    /** @return the entries in use, by id */
    Map<String, Entry> entries() {
        return entries;
    }

    @Override
    public Set<String> listenerIds() {
        return java.util.Collections.unmodifiableSet(new java.util.LinkedHashSet<>(orderedIds()));
    }

    private java.util.List<String> orderedIds() {
        return java.util.List.copyOf(entries.keySet());
    }

    @Override
    public AcemqListenerHandle listener(String id) {
        Entry e = entries.get(id);
        if (e == null) {
            throw new IllegalArgumentException("No @AcemqListener has the id '" + id + "'; the ids are "
                    + entries.keySet());
        }
        return e;
    }

    // ------------------------------------------------------------------ the monitor

    /** The container started its consumer: watch the connection and the idle listeners. */
    synchronized void started() {
        connected.clear();
        for (Entry e : entries.values()) {
            connected.put(e.connection, false);
        }
        long now = System.nanoTime();
        long tick = MAX_TICK_NANOS;
        for (Entry e : entries.values()) {
            e.lastActive = now;
            e.lastIdleEvent = now;
            if (e.idle != null) {
                tick = Math.min(tick, Math.max(MIN_TICK_NANOS, e.idle.toNanos() / 4));
            }
        }
        ScheduledThreadPoolExecutor m = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "acemq-listener-events");
            t.setDaemon(true);
            return t;
        });
        m.scheduleWithFixedDelay(this::tick, tick, tick, TimeUnit.NANOSECONDS);
        monitor = m;
    }

    /** The container is about to close its consumer: no more checks; a connected consumer is reported disconnected. */
    synchronized void stopping() {
        if (monitor != null) {
            monitor.shutdownNow();
            monitor = null;
        }
        connected.forEach((connection, was) -> {
            if (was) {
                publish(new AcemqConsumerConnectionEvent(source, connection, false));
            }
        });
        connected.replaceAll((connection, was) -> false);
    }

    private synchronized void tick() {
        try {
            if (monitor == null) {
                return;
            }
            for (Map.Entry<String, Boolean> known : connected.entrySet()) {
                AmqpConsumer c = consumers.apply(known.getKey());
                if (c == null) {
                    continue;
                }
                boolean now = c.health().connected();
                if (now != known.getValue()) {
                    known.setValue(now);
                    publish(new AcemqConsumerConnectionEvent(source, known.getKey(), now));
                }
            }
            long t = System.nanoTime();
            for (Entry e : entries.values()) {
                AmqpConsumer c = consumers.apply(e.connection);
                if (c == null || e.idle == null || e.active.get() > 0) {
                    continue;
                }
                SubscriptionControl control = c.subscription(e.name);
                if (control.isStopped() || control.isPaused()) {
                    e.lastIdleEvent = t; // idle time counts from the start or resume
                    e.lastActive = t;
                    continue;
                }
                long idleFor = t - e.lastActive;
                if (idleFor >= e.idle.toNanos() && t - e.lastIdleEvent >= e.idle.toNanos()) {
                    e.lastIdleEvent = t;
                    publish(new AcemqListenerIdleEvent(e, e.id, Duration.ofNanos(idleFor)));
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("AceMQ listener event check failed: {}", e.toString());
        }
    }

    private void publish(ApplicationEvent event) {
        try {
            publisher.accept(event);
        } catch (RuntimeException e) {
            LOG.warn("Publishing {} failed: {}", event, e.toString());
        }
    }

    // ------------------------------------------------------------------ one listener

    /** One listener: its handle, and the activity the idle check reads. */
    final class Entry implements AcemqListenerHandle {
        final String id;
        final String name;
        final String connection;
        final Duration idle;
        final AtomicInteger active = new AtomicInteger();
        volatile long lastActive = System.nanoTime();
        volatile long lastIdleEvent = lastActive;

        Entry(String id, String name, String connection, Duration idle) {
            this.id = id;
            this.name = name;
            this.connection = connection;
            this.idle = idle;
        }

        /** @return the handler, counting its invocations for the idle check (unchanged without idle events) */
        MessageHandler track(MessageHandler handler) {
            if (idle == null) {
                return handler;
            }
            return envelope -> {
                active.incrementAndGet();
                try {
                    handler.handle(envelope);
                } finally {
                    lastActive = System.nanoTime();
                    active.decrementAndGet();
                }
            };
        }

        /** @return the batch handler, counting its invocations for the idle check (unchanged without idle events) */
        BatchHandler track(BatchHandler handler) {
            if (idle == null) {
                return handler;
            }
            return batch -> {
                active.incrementAndGet();
                try {
                    handler.handle(batch);
                } finally {
                    lastActive = System.nanoTime();
                    active.decrementAndGet();
                }
            };
        }

        private SubscriptionControl control(String what) {
            AmqpConsumer c = consumers.apply(connection);
            if (c == null) {
                throw new IllegalStateException("Cannot " + what + " AceMQ listener '" + id + "': the listener "
                        + "container is not running");
            }
            return c.subscription(name);
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String connection() {
            return connection;
        }

        @Override
        public void start() {
            lastActive = System.nanoTime();
            control("start").start();
        }

        @Override
        public void stop() {
            control("stop").stop();
        }

        @Override
        public void pause() {
            SubscriptionControl c = control("pause");
            boolean was = c.isPaused();
            c.pause();
            if (!was) {
                publish(new AcemqListenerPausedEvent(this, id));
            }
        }

        @Override
        public void resume() {
            SubscriptionControl c = control("resume");
            boolean was = c.isPaused();
            c.resume();
            lastActive = System.nanoTime();
            if (was) {
                publish(new AcemqListenerResumedEvent(this, id));
            }
        }

        @Override
        public boolean isRunning() {
            AmqpConsumer c = consumers.apply(connection);
            return c != null && !c.subscription(name).isStopped();
        }

        @Override
        public boolean isPaused() {
            AmqpConsumer c = consumers.apply(connection);
            return c != null && c.subscription(name).isPaused();
        }

        @Override
        public String toString() {
            return "AcemqListener[" + id + (isRunning() ? "" : ", stopped") + (isPaused() ? ", paused" : "") + "]";
        }
    }
}

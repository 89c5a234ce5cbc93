package org.acemq.amqp.spring.internal;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Calls {@link JdbcIdempotencyStore#purgeExpired()} every {@code acemq.store.jdbc.purge-interval} on one daemon
 * thread while the application runs. Forgotten rows are never treated as present; purging only frees space.
 */
final class JdbcStorePurger implements SmartLifecycle {

    private static final Logger LOG = LoggerFactory.getLogger(JdbcStorePurger.class);

    private final JdbcIdempotencyStore store;
    private final Duration interval;
    private ScheduledExecutorService scheduler;

    JdbcStorePurger(JdbcIdempotencyStore store, Duration interval) {
        this.store = store;
        this.interval = interval;
    }

    @Override
    public synchronized void start() {
        if (scheduler != null || interval.isZero() || interval.isNegative()) {
            return;
        }
        scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "acemq-store-purge");
            t.setDaemon(true);
            return t;
        });
        long millis = Math.max(1, interval.toMillis());
        scheduler.scheduleWithFixedDelay(this::purge, millis, millis, TimeUnit.MILLISECONDS);
    }

    private void purge() {
        try {
            long purged = store.purgeExpired();
            if (purged > 0) {
                LOG.debug("Purged {} expired ids from {}", purged, store.tableName());
            }
        } catch (RuntimeException e) {
            LOG.warn("Purging expired ids from {} failed; trying again in {}", store.tableName(), interval, e);
        }
    }

    @Override
    public synchronized void stop() {
        if (scheduler != null) {
            scheduler.shutdownNow();
            scheduler = null;
        }
    }

    @Override
    public synchronized boolean isRunning() {
        return scheduler != null;
    }
}

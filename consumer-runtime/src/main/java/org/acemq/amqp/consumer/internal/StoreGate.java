package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tracks whether the store answers. Under {@link StoreFailurePolicy#FAIL_CLOSED} the first failure pauses the whole
 * consumer (no credit for any subscription) and starts probing the store with a doubling delay; the first successful
 * probe resumes it and wakes every subscription.
 */
final class StoreGate {

    private static final Logger LOG = LoggerFactory.getLogger(StoreGate.class);

    private final StoreAccess store;
    private final StoreFailurePolicy policy;
    private final ConsumerObserver observer;
    private final Scheduler scheduler;
    private final Duration firstDelay;
    private final Duration maxDelay;
    private final Runnable onPause;
    private final Runnable onResume;

    private volatile boolean reachable = true;
    private volatile boolean paused;
    private volatile boolean shutdown;
    private volatile String lastError;
    private long delayMillis;

    StoreGate(StoreAccess store, StoreFailurePolicy policy, ConsumerObserver observer,
              Scheduler scheduler, Duration firstDelay, Duration maxDelay, Runnable onPause,
              Runnable onResume) {
        this.store = store;
        this.policy = policy;
        this.observer = observer;
        this.scheduler = scheduler;
        this.firstDelay = firstDelay;
        this.maxDelay = maxDelay;
        this.onPause = onPause;
        this.onResume = onResume;
    }

    boolean paused() {
        return paused;
    }

    boolean reachable() {
        return reachable;
    }

    String lastError() {
        return lastError;
    }

    void success() {
        if (!reachable && !paused) {
            reachable = true;
        }
    }

    /**
     * A store call failed: the store is down as far as that call can tell (a refused key is not reported here).
     *
     * @param error what the store threw
     */
    void failure(Throwable error) {
        reachable = false;
        lastError = "store: " + Errors.describe(error);
        if (policy != StoreFailurePolicy.FAIL_CLOSED) {
            return;
        }
        boolean pauseNow;
        synchronized (this) {
            pauseNow = !paused && !shutdown;
            if (pauseNow) {
                paused = true;
                delayMillis = firstDelay.toMillis();
            }
        }
        if (pauseNow) {
            LOG.warn("Idempotency store unreachable, pausing consumption until it answers: {}", lastError);
            observer.paused(true);
            onPause.run();
            scheduleProbe();
        }
    }

    private void scheduleProbe() {
        if (shutdown) {
            return;
        }
        long delay;
        synchronized (this) {
            delay = delayMillis;
            delayMillis = Math.min(delayMillis * 2, maxDelay.toMillis());
        }
        try {
            scheduler.schedule(this::probe, Duration.ofMillis(delay));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("Store probe not scheduled: shutting down");
        }
    }

    private void probe() {
        if (shutdown) {
            return;
        }
        try {
            store.probe();
        } catch (RuntimeException e) {
            lastError = "store: " + Errors.describe(e);
            LOG.debug("Store probe failed: {}", lastError);
            scheduleProbe();
            return;
        }
        synchronized (this) {
            paused = false;
            reachable = true;
        }
        LOG.info("Idempotency store answers again, resuming consumption");
        observer.paused(false);
        onResume.run();
    }

    void shutdown() {
        shutdown = true;
    }
}

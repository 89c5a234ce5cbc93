package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer's threads for delayed and blocking work: the {@link Scheduler} (timing; the application's, or two threads
 * of its own) and one control thread (attaching, re-attaching, link events that must not run on the I/O thread).
 */
final class Control {

    private static final Logger LOG = LoggerFactory.getLogger(Control.class);

    private final Scheduler scheduler;
    private final ScheduledThreadPoolExecutor ownScheduler;
    private final ExecutorService control;

    /**
     * @param consumer the consumer's name (its threads' names start with it)
     * @param scheduler the application's scheduler, or null for one of our own
     */
    Control(String consumer, Scheduler scheduler) {
        if (scheduler == null) {
            AtomicInteger threads = new AtomicInteger();
            ownScheduler = new ScheduledThreadPoolExecutor(2,
                    r -> daemon(r, consumer + "-scheduler-" + threads.incrementAndGet()));
            ownScheduler.setRemoveOnCancelPolicy(true);
            this.scheduler = (task, delay) -> ownScheduler.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
        } else {
            ownScheduler = null;
            this.scheduler = scheduler;
        }
        this.control = Executors.newSingleThreadExecutor(r -> daemon(r, consumer + "-control"));
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /** @return the scheduler (the application's, so that tests can move time, or our own) */
    Scheduler scheduler() {
        return scheduler;
    }

    /**
     * Runs {@code task} on the control thread.
     *
     * @throws RejectedExecutionException once the consumer is closed
     */
    void execute(Runnable task) {
        control.execute(task);
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

    /** Stops both (the consumer is closed). */
    void shutdown() {
        control.shutdownNow();
        if (ownScheduler != null) {
            ownScheduler.shutdownNow();
        }
    }
}

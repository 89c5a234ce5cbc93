package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.internal.HeartbeatScheduler;

/**
 * Lease heartbeats that run only when a test says so ({@link #beat()}), on the test's thread: with a moved store
 * clock this makes lease renewal deterministic, without sleeping.
 */
final class ManualHeartbeats implements HeartbeatScheduler {

    record Scheduled(Runnable beat, Duration period, Handle handle) {
    }

    final List<Scheduled> scheduled = new CopyOnWriteArrayList<>();

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable beat, Duration period) {
        Handle handle = new Handle();
        scheduled.add(new Scheduled(beat, period, handle));
        return handle;
    }

    /**
     * Runs every live heartbeat once. A beat that throws has ended itself (as with a real fixed-rate schedule).
     *
     * @return how many ran
     */
    int beat() {
        int ran = 0;
        for (Scheduled s : scheduled) {
            if (s.handle().isDone()) {
                continue;
            }
            ran++;
            try {
                s.beat().run();
            } catch (RuntimeException e) {
                s.handle().completeExceptionally(e);
            }
        }
        return ran;
    }

    /** @return how many heartbeats are still scheduled (neither cancelled nor ended) */
    long live() {
        return scheduled.stream().filter(s -> !s.handle().isDone()).count();
    }

    static final class Handle extends CompletableFuture<Void> implements ScheduledFuture<Void> {
        @Override
        public long getDelay(TimeUnit unit) {
            return 0;
        }

        @Override
        public int compareTo(Delayed other) {
            return 0;
        }
    }
}

package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SweepingHeartbeatsTest {

    private final ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(1);
    private final SweepingHeartbeats heartbeats = new SweepingHeartbeats(scheduler);

    @AfterEach
    void stop() {
        scheduler.shutdownNow();
    }

    @Test
    void beatRunsRepeatedlyUntilCancelledAndIsForgottenThen() {
        AtomicInteger beats = new AtomicInteger();
        long start = System.nanoTime();
        ScheduledFuture<?> handle = heartbeats.scheduleAtFixedRate(beats::incrementAndGet, Duration.ofMillis(30));
        await().atMost(Duration.ofSeconds(5)).until(() -> beats.get() >= 3);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("not before three periods")
                .isGreaterThanOrEqualTo(Duration.ofMillis(90));
        assertThat(handle.cancel(false)).isTrue();
        assertThat(handle.isCancelled()).isTrue();
        assertThat(heartbeats.size()).isZero();
        int after = beats.get();
        // two more beats of a second registration prove sweeps went on without running the cancelled one
        AtomicInteger other = new AtomicInteger();
        heartbeats.scheduleAtFixedRate(other::incrementAndGet, Duration.ofMillis(30));
        await().atMost(Duration.ofSeconds(5)).until(() -> other.get() >= 2);
        assertThat(beats.get()).isEqualTo(after);
    }

    @Test
    void beatThatThrowsEndsItsOwnRenewal() {
        AtomicInteger beats = new AtomicInteger();
        heartbeats.scheduleAtFixedRate(() -> {
            beats.incrementAndGet();
            throw new CancellationException("lease lost");
        }, Duration.ofMillis(20));
        await().atMost(Duration.ofSeconds(5)).until(() -> heartbeats.size() == 0);
        AtomicInteger other = new AtomicInteger();
        heartbeats.scheduleAtFixedRate(other::incrementAndGet, Duration.ofMillis(20));
        await().atMost(Duration.ofSeconds(5)).until(() -> other.get() >= 2);
        assertThat(beats.get()).isEqualTo(1);
    }

    @Test
    void sweepIsATenthOfTheShortestPeriodAndAtMost100Millis() {
        heartbeats.scheduleAtFixedRate(() -> { }, Duration.ofSeconds(10));
        assertThat(heartbeats.sweepInterval()).isEqualTo(Duration.ofMillis(100));
        heartbeats.scheduleAtFixedRate(() -> { }, Duration.ofMillis(20));
        assertThat(heartbeats.sweepInterval()).isEqualTo(Duration.ofMillis(2));
        heartbeats.scheduleAtFixedRate(() -> { }, Duration.ofSeconds(1));
        assertThat(heartbeats.sweepInterval()).as("never coarser again").isEqualTo(Duration.ofMillis(2));
    }
}

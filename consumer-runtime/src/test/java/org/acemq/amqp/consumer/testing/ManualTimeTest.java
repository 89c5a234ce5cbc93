package org.acemq.amqp.consumer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class ManualTimeTest {

    private final ManualTime time = new ManualTime();

    @Test
    void aTaskRunsWhenTheClockReachesItsDueTimeAndNotBefore() {
        List<String> ran = new CopyOnWriteArrayList<>();
        time.schedule(() -> ran.add("at 10 s, clock " + time.read()), Duration.ofSeconds(10));

        assertThat(time.advance(Duration.ofSeconds(9))).isZero();
        assertThat(ran).isEmpty();
        assertThat(time.read()).isEqualTo(Duration.ofSeconds(9).toNanos());

        assertThat(time.advance(Duration.ofSeconds(1))).isEqualTo(1);
        assertThat(ran).containsExactly("at 10 s, clock " + Duration.ofSeconds(10).toNanos());
        assertThat(time.advance(Duration.ofMinutes(1))).as("a task runs once").isZero();
        assertThat(time.pending()).isZero();
    }

    @Test
    void tasksRunInTheOrderOfTheirDueTimeAndThoseDueTogetherInTheOrderScheduled() {
        List<String> ran = new CopyOnWriteArrayList<>();
        time.schedule(() -> ran.add("c"), Duration.ofSeconds(3));
        time.schedule(() -> ran.add("a"), Duration.ofSeconds(1));
        time.schedule(() -> ran.add("b1"), Duration.ofSeconds(2));
        time.schedule(() -> ran.add("b2"), Duration.ofSeconds(2));

        assertThat(time.advance(Duration.ofSeconds(5))).isEqualTo(4);
        assertThat(ran).containsExactly("a", "b1", "b2", "c");
        assertThat(time.read()).isEqualTo(Duration.ofSeconds(5).toNanos());
    }

    @Test
    void aTaskScheduledByARunningTaskRunsInTheSameAdvanceWhenItFallsDueBeforeTheTarget() {
        AtomicInteger beats = new AtomicInteger();
        Runnable heartbeat = new Runnable() {
            @Override
            public void run() {
                beats.incrementAndGet();
                time.schedule(this, Duration.ofSeconds(10));
            }
        };
        time.schedule(heartbeat, Duration.ofSeconds(10));

        assertThat(time.advance(Duration.ofSeconds(35))).isEqualTo(3);
        assertThat(beats).hasValue(3);
        assertThat(time.pending()).as("the fourth beat waits for 40 s").isEqualTo(1);
    }

    @Test
    void aTaskNeverRunsInsideScheduleEvenWithNoDelayAndACancelledTaskNeverRuns() {
        AtomicInteger ran = new AtomicInteger();
        Future<?> now = time.schedule(ran::incrementAndGet, Duration.ZERO);
        Future<?> cancelled = time.schedule(ran::incrementAndGet, Duration.ofSeconds(1));
        assertThat(ran).hasValue(0);
        assertThat(cancelled.cancel(false)).isTrue();

        assertThat(time.advance(Duration.ZERO)).isEqualTo(1);
        assertThat(now).isDone();
        assertThat(time.advance(Duration.ofSeconds(2))).as("the cancelled task").isZero();
        assertThat(ran).hasValue(1);
    }

    @Test
    void aTaskThatThrowsStopsTheAdvanceAtItsDueTimeAndTheRestRunsNextTime() {
        AtomicInteger ran = new AtomicInteger();
        time.schedule(() -> {
            throw new IllegalStateException("boom");
        }, Duration.ofSeconds(1));
        time.schedule(ran::incrementAndGet, Duration.ofSeconds(2));

        assertThatThrownBy(() -> time.advance(Duration.ofSeconds(5))).hasMessage("boom");
        assertThat(time.read()).isEqualTo(Duration.ofSeconds(1).toNanos());
        assertThat(ran).hasValue(0);
        assertThat(time.advance(Duration.ofSeconds(4))).isEqualTo(1);
    }

    @Test
    void timeNeverGoesBack() {
        assertThatThrownBy(() -> time.advance(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void tasksScheduledFromManyThreadsWhileTheClockMovesEachRunExactlyOnce() throws Exception {
        int threads = 4;
        int perThread = 500;
        AtomicInteger ran = new AtomicInteger();
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> schedulers = new CopyOnWriteArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                schedulers.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < perThread; i++) {
                        time.schedule(ran::incrementAndGet, Duration.ofMillis(i % 7));
                    }
                    return null;
                }));
            }
            pool.shutdown();
            go.countDown();
            while (!pool.awaitTermination(1, TimeUnit.MILLISECONDS)) {
                time.advance(Duration.ofMillis(1)); // the clock moves while the others schedule
            }
            for (Future<?> f : schedulers) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        time.advance(Duration.ofMillis(10));
        assertThat(ran).hasValue(threads * perThread);
        assertThat(time.pending()).isZero();
    }
}

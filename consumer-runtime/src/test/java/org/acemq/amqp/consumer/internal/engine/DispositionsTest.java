package org.acemq.amqp.consumer.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.qpid.protonj2.engine.Scheduler;
import org.apache.qpid.protonj2.types.messaging.Accepted;
import org.junit.jupiter.api.Test;

/**
 * The hand-over rules of {@link Dispositions} without a wire: how many tasks the I/O thread gets, and what happens to
 * dispositions when it refuses tasks (its connection closed). The deliveries here have no engine, so the write task
 * finds each unwritable and drops it, which is how it reports what it took. The writing itself is covered on the wire
 * by {@code WireDispositionBatchTest} and {@code WireDispositionDroppedTest}.
 */
class DispositionsTest {

    /** An I/O thread that runs its tasks when the test says, or refuses them. */
    private static final class ManualIo implements Scheduler {
        final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
        int executed;
        boolean refusing;
        Runnable whileRefusing;

        @Override
        public void execute(Runnable command) {
            executed++;
            if (refusing) {
                if (whileRefusing != null) {
                    whileRefusing.run();
                }
                throw new RejectedExecutionException("closed");
            }
            tasks.add(command);
        }

        void runAll() {
            Runnable r;
            while ((r = tasks.poll()) != null) {
                r.run();
            }
        }

        @Override
        public boolean isShutdown() {
            return refusing;
        }

        @Override
        public Future<?> schedule(Runnable command, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public <V> Future<V> schedule(Callable<V> task, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Future<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Future<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
            throw new UnsupportedOperationException();
        }
    }

    private final ManualIo io = new ManualIo();
    private final Dispositions dispositions = new Dispositions(io, null);
    @Test
    void dispositionsHandedOverBeforeTheWriteTaskRunsShareThatOneTask() {
        AtomicInteger dropped = new AtomicInteger();
        for (int i = 0; i < 5; i++) {
            assertThat(dispositions.add(null, Accepted.getInstance(), dropped::incrementAndGet)).isTrue();
        }
        assertThat(io.executed).as("one task for the five").isEqualTo(1);
        assertThat(dropped).as("nothing taken before the task runs").hasValue(0);
        io.runAll();
        assertThat(dropped).as("each was taken by that one task (and dropped: no engine)").hasValue(5);

        assertThat(dispositions.add(null, Accepted.getInstance(), dropped::incrementAndGet)).isTrue();
        assertThat(io.executed).as("the next hand-over after the task ran queues a new one").isEqualTo(2);
        io.runAll();
        assertThat(dropped).hasValue(6);
    }

    @Test
    void aRefusedTaskRefusesTheDispositionOfTheThreadThatAskedAndDropsTheOnesHandedOverMeanwhile() {
        AtomicInteger mineDropped = new AtomicInteger();
        AtomicInteger othersDropped = new AtomicInteger();
        io.refusing = true;
        // another thread hands one over while the task is being refused: it saw a task scheduled, so it was told queued
        io.whileRefusing = () -> assertThat(dispositions.add(null, Accepted.getInstance(),
                othersDropped::incrementAndGet)).isTrue();
        assertThat(dispositions.add(null, Accepted.getInstance(), mineDropped::incrementAndGet))
                .as("refused: the caller reports it abandoned").isFalse();
        assertThat(mineDropped).as("a refused disposition is not also reported dropped").hasValue(0);
        assertThat(othersDropped).as("the other will never be written: reported dropped").hasValue(1);

        io.whileRefusing = null;
        assertThat(dispositions.add(null, Accepted.getInstance(), mineDropped::incrementAndGet))
                .as("a later hand-over asks the I/O thread again").isFalse();
        assertThat(io.executed).isEqualTo(2);
    }
}

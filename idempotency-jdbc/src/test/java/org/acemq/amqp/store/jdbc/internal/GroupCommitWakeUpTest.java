package org.acemq.amqp.store.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.api.StoreUnavailableException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A store call through {@link GroupCommit} leaves no wake-up behind for its caller: after it returns, the caller's
 * next {@code LockSupport.parkNanos} (application code on a handler thread, typically) sleeps its full time, whether
 * the caller led the batch (and answered its own request) or waited while another thread led it.
 */
@Timeout(60)
class GroupCommitWakeUpTest {

    private static final long PARK = Duration.ofMillis(20).toNanos();

    static final class Call extends GroupCommit.Request<Integer> {
        final int value;

        Call(int value) {
            this.value = value;
        }

        @Override
        protected StoreUnavailableException interrupted(InterruptedException cause) {
            return new StoreUnavailableException("interrupted", cause);
        }
    }

    /** @return whether a park of {@link #PARK} slept at least that long */
    private static boolean parksFully() {
        long start = System.nanoTime();
        LockSupport.parkNanos(PARK);
        return System.nanoTime() - start >= PARK;
    }

    /** A barrier on a monitor (a CyclicBarrier's AQS lock could itself leave a stray unpark behind). */
    static final class MonitorBarrier {
        private final int parties;
        private int waiting;
        private long round;

        MonitorBarrier(int parties) {
            this.parties = parties;
        }

        synchronized void await() throws InterruptedException {
            long mine = round;
            if (++waiting == parties) {
                waiting = 0;
                round++;
                notifyAll();
                return;
            }
            while (round == mine) {
                wait();
            }
        }
    }

    @Test
    void aLoneCallerThatLedItsOwnBatchParksItsFullTimeAfterwards() {
        GroupCommit gc = new GroupCommit(16, 1);
        GroupCommit.Lane<Call> lane = gc.lane("echo", batch -> batch.forEach(c -> c.complete(c.value)));
        for (int i = 0; i < 5; i++) {
            assertThat(lane.submit(new Call(i))).isEqualTo(i);
            assertThat(parksFully()).as("park after call %d", i).isTrue();
        }
    }

    @Test
    void callersAnsweredByAnotherLeaderParkTheirFullTimeAfterwards() throws Exception {
        int threads = 6;
        int rounds = 20;
        GroupCommit gc = new GroupCommit(16, 1);
        AtomicInteger batches = new AtomicInteger();
        GroupCommit.Lane<Call> lane = gc.lane("echo", batch -> {
            batches.incrementAndGet();
            // a slow statement: the round's other callers queue behind it (bounded, in case some never come)
            long until = System.nanoTime() + Duration.ofMillis(200).toNanos();
            while (batch.size() + gc.queued() < threads && System.nanoTime() - until < 0) {
                Thread.onSpinWait();
            }
            batch.forEach(c -> c.complete(c.value));
        });
        AtomicInteger early = new AtomicInteger();
        MonitorBarrier start = new MonitorBarrier(threads);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            Thread w = new Thread(() -> {
                try {
                    for (int r = 0; r < rounds; r++) {
                        start.await();
                        lane.submit(new Call(id));
                        if (!parksFully()) {
                            early.incrementAndGet();
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            workers.add(w);
            w.start();
        }
        for (Thread w : workers) {
            w.join();
        }
        assertThat(batches.get()).as("some calls waited for another leader's batch").isLessThan(threads * rounds);
        assertThat(early.get()).as("parks cut short after a store call").isZero();
    }
}

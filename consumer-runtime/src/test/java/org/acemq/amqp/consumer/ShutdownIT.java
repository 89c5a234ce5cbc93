package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Graceful shutdown against a real broker: nothing is lost and nothing happens twice, whether the handlers finish
 * within the shutdown timeout or not.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShutdownIT extends ArtemisTestBase {

    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void unblockHandlers() {
        release.countDown();
    }

    @Test
    void closeLetsRunningHandlersFinishReleasesPrefetchedDeliveriesAndTheNextConsumerTakesExactlyTheRest()
            throws Exception {
        String q = "shutdown-graceful";
        int total = 200;
        int concurrency = 4;
        int prefetch = 50;
        client.sendBatch(q, total, i -> "job-" + i);

        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        E2e.Effects effects = new E2e.Effects();
        AtomicInteger started = new AtomicInteger();
        RecordingObserver first = new RecordingObserver();
        AmqpConsumer consumer = E2e.consumer(broker, "first").store(store).observer(first)
                .subscribe(Subscription.builder(q, e -> {
                    started.incrementAndGet();
                    E2e.await(release);
                    effects.record(e.id());
                }).concurrency(concurrency).prefetch(prefetch).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start();
        // Every handler thread busy, the whole prefetch received and waiting.
        await().until(() -> started.get() == concurrency
                && consumer.health().subscriptions().get(0).inFlight() == concurrency + prefetch);

        Thread closer = new Thread(() -> assertThat(consumer.close(Duration.ofSeconds(20))).isTrue(), "closer");
        AtomicInteger closeFailures = new AtomicInteger();
        closer.setUncaughtExceptionHandler((t, e) -> closeFailures.incrementAndGet());
        closer.start();
        // The consumer stopped taking deliveries (the link reports detached once stopping); handlers are still busy.
        await().until(() -> !consumer.health().subscriptions().get(0).attached());
        assertThat(consumer.health().state()).isEqualTo(ConsumerHealth.State.STOPPING);
        assertThat(effects.total()).isZero();
        release.countDown();
        closer.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(closer.isAlive()).isFalse();
        assertThat(closeFailures).as("close(20 s) returned true").hasValue(0);
        assertThat(consumer.health().state()).isEqualTo(ConsumerHealth.State.STOPPED);

        assertThat(started).as("no handler started after close began").hasValue(concurrency);
        assertThat(first.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(concurrency);
        assertThat(first.count(Outcome.RELEASED, SettleReason.SHUTDOWN)).isEqualTo(prefetch);
        assertThat(first.settlements()).hasSize(concurrency + prefetch);
        assertThat(first.abandonments()).isEqualTo(0);
        assertThat(effects.total()).isEqualTo(concurrency);
        await().until(() -> broker.deliveringCount(q) == 0 && broker.messageCount(q) == total - concurrency);

        RecordingObserver second = new RecordingObserver();
        try (AmqpConsumer next = E2e.consumer(broker, "second").store(store.newPeer()).observer(second)
                .subscribe(Subscription.builder(q, e -> effects.record(e.id())).concurrency(concurrency)
                        .prefetch(prefetch).build())
                .start()) {
            await().until(() -> second.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == total - concurrency);
            await().until(() -> broker.messageCount(q) == 0);
        }
        assertThat(second.settlements()).hasSize(total - concurrency);
        assertThat(effects.total()).isEqualTo(total);
        assertThat(effects.ids()).hasSize(total);
        assertThat(effects.repeated()).isEmpty();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void closeWithZeroTimeoutLeavesTheBlockedHandlersClaimSoTheRedeliveryWaitsAsInProgressUntilItFinishes() {
        String q = "shutdown-timeout";
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder().lease(Duration.ofSeconds(30)).build();
        E2e.Effects effects = new E2e.Effects();
        CountDownLatch started = new CountDownLatch(1);
        RecordingObserver first = new RecordingObserver();
        AmqpConsumer consumer = E2e.consumer(broker, "stuck").store(store).observer(first)
                .subscribe(Subscription.builder(q, e -> {
                    started.countDown();
                    // Stuck in work that ignores interrupts (close() interrupts the workers it gives up on).
                    E2e.awaitUninterruptibly(release, Duration.ofSeconds(30));
                    effects.record(e.id());
                }).concurrency(1).prefetch(0).build())
                .start();
        client.send(q, AmqpTestClient.message("stuck-1", "slow work"));
        E2e.await(started);

        String log;
        boolean finished;
        PrintStream originalErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(new TeeStream(originalErr, captured), true, StandardCharsets.UTF_8));
        try {
            finished = consumer.close(Duration.ZERO);
        } finally {
            System.setErr(originalErr);
            log = captured.toString(StandardCharsets.UTF_8);
        }
        assertThat(finished).as("close(ZERO) with a handler still running").isFalse();
        assertThat(log).contains("WARN").contains("handler(s) still running at shutdown");
        assertThat(consumer.health().state()).isEqualTo(ConsumerHealth.State.STOPPED);
        // The connection is gone; the unsettled delivery went back to the queue.
        await().until(() -> broker.deliveringCount(q) == 0 && broker.messageCount(q) == 1);
        assertThat(store.isConfirmed(q + "|s:stuck-1")).isFalse();

        RecordingObserver second = new RecordingObserver();
        AtomicInteger runsOnSecond = new AtomicInteger();
        try (AmqpConsumer next = E2e.consumer(broker, "next").store(store.newPeer()).observer(second)
                .subscribe(Subscription.builder(q, e -> {
                    runsOnSecond.incrementAndGet();
                    effects.record(e.id());
                }).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start()) {
            // The stuck handler still holds its claim: the next consumer sees the message as IN_PROGRESS and
            // gives it back, again and again, without running it and without accepting it.
            await().until(() -> second.count(Outcome.RELEASED, SettleReason.IN_PROGRESS) >= 3);
            assertThat(second.settlements()).allSatisfy(s -> assertThat(s.reason()).isEqualTo(SettleReason.IN_PROGRESS));
            assertThat(runsOnSecond).hasValue(0);
            assertThat(effects.total()).isZero();

            // The stuck handler completes: its claim is confirmed (its own delivery can no longer be settled,
            // the link is closed), and the copy circulating on the next consumer is absorbed as a duplicate.
            release.countDown();
            await().until(() -> store.isConfirmed(q + "|s:stuck-1"));
            await().until(() -> first.abandonments() == 1);
            await().until(() -> second.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
            await().until(() -> broker.messageCount(q) == 0);
        }
        assertThat(runsOnSecond).hasValue(0);
        assertThat(effects.of(q + "|s:stuck-1")).isEqualTo(1);
        assertThat(first.settlements()).isEmpty();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    /** Writes to two streams. */
    private static final class TeeStream extends OutputStream {
        private final OutputStream a;
        private final OutputStream b;

        TeeStream(OutputStream a, OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public synchronized void write(int c) throws java.io.IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public synchronized void write(byte[] buf, int off, int len) throws java.io.IOException {
            a.write(buf, off, len);
            b.write(buf, off, len);
        }

        @Override
        public void flush() throws java.io.IOException {
            a.flush();
            b.flush();
        }
    }
}

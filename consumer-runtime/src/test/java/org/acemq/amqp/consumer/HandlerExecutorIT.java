package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code Subscription.Builder.handlerExecutor}: the handlers run on the application's executor, never more than
 * {@code concurrency} at once, every message once; the consumer does not shut the executor down; an executor that
 * refuses the handler loops fails the start with a message that says why.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HandlerExecutorIT extends ArtemisTestBase {

    @Test
    void handlersRunOnTheApplicationsExecutorAtMostConcurrencyAtOnce() throws Exception {
        String q = "exec-orders";
        int messages = 200;
        client.sendBatch(q, messages, i -> "order-" + i, i -> "body-" + i);
        AtomicInteger threads = new AtomicInteger();
        ExecutorService executor = Executors.newCachedThreadPool(r -> new Thread(r, "app-pool-" + threads.incrementAndGet()));
        Set<String> handlerThreads = ConcurrentHashMap.newKeySet();
        AtomicInteger running = new AtomicInteger();
        AtomicInteger mostAtOnce = new AtomicInteger();
        E2e.Effects effects = new E2e.Effects();
        RecordingObserver observer = new RecordingObserver();
        try {
            try (AmqpConsumer consumer = E2e.consumer(broker, "exec").store(InMemoryIdempotencyStore.ofDefaults())
                    .observer(observer)
                    .subscribe(Subscription.builder(q, e -> {
                        int now = running.incrementAndGet();
                        mostAtOnce.accumulateAndGet(now, Math::max);
                        handlerThreads.add(Thread.currentThread().getName());
                        Thread.yield();
                        effects.record(e.id());
                        running.decrementAndGet();
                    }).concurrency(3).prefetch(20).handlerExecutor(executor).build())
                    .start()) {
                await().atMost(Duration.ofSeconds(30))
                        .until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == messages);
            }
            assertThat(effects.total()).isEqualTo(messages);
            assertThat(effects.repeated()).isEmpty();
            assertThat(handlerThreads).isNotEmpty().allSatisfy(n -> assertThat(n).startsWith("app-pool-"));
            assertThat(mostAtOnce.get()).isBetween(1, 3);
            assertThat(threads.get()).as("one long-running task per handler slot").isEqualTo(3);
            assertThat(executor.isShutdown()).as("the consumer leaves the application's executor alone").isFalse();
            CountDownLatch stillUsable = new CountDownLatch(1);
            executor.execute(stillUsable::countDown);
            assertThat(stillUsable.await(10, TimeUnit.SECONDS)).isTrue();
        } finally {
            executor.shutdownNow();
        }
        assertThat(broker.messageCount(q)).isZero();
    }

    @Test
    void anExecutorThatRefusesTheHandlerLoopsFailsTheStart() {
        AmqpConsumer.Builder builder = E2e.consumer(broker, "refused").store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder("exec-refused", e -> { })
                        .concurrency(2)
                        .handlerExecutor(task -> {
                            throw new RejectedExecutionException("full");
                        })
                        .build());
        assertThatThrownBy(builder::start)
                .isInstanceOf(AcemqException.class)
                .hasMessageContaining("handler executor")
                .hasMessageContaining("exec-refused");
    }
}

package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/** Shared helpers for the end-to-end ITs that run the real runtime against an in-JVM Artemis broker. */
final class E2e {

    /** IN_PROGRESS copies are held this long before going back (keeps the suite fast). */
    static final Duration IN_PROGRESS_DELAY = Duration.ofMillis(100);

    private E2e() {
    }

    /** A broker whose own delivery limit is far above any subscription's maxAttempts, redelivery delay 0. */
    static EmbeddedArtemis broker(boolean persistent) {
        return EmbeddedArtemis.builder().persistent(persistent).maxDeliveryAttempts(100)
                .redeliveryDelay(Duration.ZERO).build().start();
    }

    /** Connection settings for the broker with a fast reconnect. */
    static ConnectionSettings connection(EmbeddedArtemis broker) {
        return ConnectionSettings.builder(broker.host(), broker.port())
                .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(500))
                .openTimeout(Duration.ofSeconds(10))
                .requestTimeout(Duration.ofSeconds(10))
                .build();
    }

    /** A consumer builder with the fast settings every IT shares. */
    static AmqpConsumer.Builder consumer(EmbeddedArtemis broker, String name) {
        return AmqpConsumer.builder()
                .name(name)
                .connection(connection(broker))
                .storeRetryDelay(Duration.ofMillis(50), Duration.ofMillis(200))
                .shutdownTimeout(Duration.ofSeconds(10));
    }

    /** Counts the effect (a successful handler run) of every message id. */
    static final class Effects {
        private final Map<String, AtomicInteger> byId = new ConcurrentHashMap<>();
        private final AtomicInteger total = new AtomicInteger();

        void record(String id) {
            byId.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            total.incrementAndGet();
        }

        int total() {
            return total.get();
        }

        int of(String id) {
            AtomicInteger n = byId.get(id);
            return n == null ? 0 : n.get();
        }

        Set<String> ids() {
            return Set.copyOf(byId.keySet());
        }

        /** @return ids whose effect happened more than once, with their counts */
        Map<String, Integer> repeated() {
            return byId.entrySet().stream().filter(e -> e.getValue().get() > 1)
                    .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().get()));
        }
    }

    /** Waits for the latch, ignoring interrupts: a handler stuck in non-interruptible work. */
    static void awaitUninterruptibly(CountDownLatch latch, Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        boolean interrupted = false;
        while (latch.getCount() > 0 && System.nanoTime() < deadline) {
            try {
                latch.await(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits for the latch; a handler's blocking step (bounded so a broken test cannot hang the build). */
    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("latch not released within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}

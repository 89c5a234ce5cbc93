package org.acemq.amqp.store.redis;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/** The runtime set up as the end-to-end tests need it: fast reconnects and store probes, short holds. */
final class E2e {

    static final Duration IN_PROGRESS_DELAY = Duration.ofMillis(100);

    private E2e() {
    }

    /** A broker whose own delivery limit is far above any subscription's maxAttempts, redelivery delay 0. */
    static EmbeddedArtemis broker() {
        return EmbeddedArtemis.builder().persistent(false).maxDeliveryAttempts(100).redeliveryDelay(Duration.ZERO)
                .build().start();
    }

    static AmqpConsumer.Builder consumer(EmbeddedArtemis broker, String name, IdempotencyStore store) {
        return AmqpConsumer.builder()
                .name(name)
                .connection(ConnectionSettings.builder(broker.host(), broker.port())
                        .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(500))
                        .openTimeout(Duration.ofSeconds(10))
                        .requestTimeout(Duration.ofSeconds(10))
                        .build())
                .store(store)
                .storeRetryDelay(Duration.ofMillis(50), Duration.ofMillis(200))
                .shutdownTimeout(Duration.ofSeconds(10));
    }

    /** Counts the effect (a successful handler run) of every message key. */
    static final class Effects {
        private final Map<String, AtomicInteger> byId = new ConcurrentHashMap<>();
        private final AtomicInteger total = new AtomicInteger();

        void record(String id) {
            byId.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            total.incrementAndGet();
        }

        int of(String id) {
            AtomicInteger count = byId.get(id);
            return count == null ? 0 : count.get();
        }

        int distinct() {
            return byId.size();
        }

        int total() {
            return total.get();
        }

        Map<String, Integer> repeated() {
            Map<String, Integer> repeated = new java.util.TreeMap<>();
            byId.forEach((id, count) -> {
                if (count.get() > 1) {
                    repeated.put(id, count.get());
                }
            });
            return repeated;
        }
    }
}

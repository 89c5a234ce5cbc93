package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.store.jdbc.JdbcDialect;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.h2.jdbcx.JdbcConnectionPool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime on the JDBC store with H2 (in process), end to end: embedded Artemis, two consumers on one queue, each
 * with a store of its own (two owners, two connection pools) on the same H2 database. Every message is sent twice and
 * some handlers fail on their first attempt: each message's effect happens exactly once, its key ends confirmed, and
 * the attempts the store counted are the handler runs. Run on an H2 file database (as an application's tests would
 * keep one) and on an in-memory one.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class H2EndToEndIT extends ArtemisTestBase {

    private static final int MESSAGES = 300;

    @TempDir
    Path dir;

    @Test
    void onAnH2FileDatabaseEveryMessageTakesEffectOnce() {
        runOn("h2-file-orders", "jdbc:h2:file:" + dir.resolve("acemq").toAbsolutePath() + ";LOCK_TIMEOUT=10000");
    }

    @Test
    void onAnH2InMemoryDatabaseEveryMessageTakesEffectOnce() {
        runOn("h2-mem-orders", "jdbc:h2:mem:H2EndToEndIT_" + System.nanoTime() + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000");
    }

    private void runOn(String queue, String url) {
        JdbcConnectionPool poolA = JdbcConnectionPool.create(url, "sa", "");
        JdbcConnectionPool poolB = JdbcConnectionPool.create(url, "sa", "");
        try {
            JdbcIdempotencyStore storeA = JdbcIdempotencyStore.builder(poolA).build();
            JdbcIdempotencyStore storeB = JdbcIdempotencyStore.builder(poolB).build();
            storeA.createSchema();
            assertThat(storeA.dialect()).isEqualTo(JdbcDialect.H2);
            assertThat(storeA.owner()).isNotEqualTo(storeB.owner());

            E2e.Effects effects = new E2e.Effects();
            Set<String> failedOnce = ConcurrentHashMap.newKeySet();
            MessageHandler handler = envelope -> {
                String id = envelope.id();
                if (id.endsWith("0") && failedOnce.add(id)) {
                    throw new IllegalStateException("first attempt of " + id + " fails");
                }
                effects.record(id);
            };
            List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                messages.add(AmqpTestClient.message("order-" + i, "order " + i));
            }
            try (AmqpConsumer a = consumer("h2-a", queue, storeA, handler);
                    AmqpConsumer b = consumer("h2-b", queue, storeB, handler)) {
                client.send(queue, messages);
                client.send(queue, messages);

                await().atMost(Duration.ofSeconds(100)).pollInterval(Duration.ofMillis(50))
                        .until(() -> effects.ids().size() == MESSAGES && broker.messageCount(queue) == 0
                                && broker.deliveringCount(queue) == 0);
            }
            assertThat(effects.repeated()).as("effects that happened twice").isEmpty();
            assertThat(effects.total()).isEqualTo(MESSAGES);
            for (int i = 0; i < MESSAGES; i++) {
                String key = queue + "|s:order-" + i;
                assertThat(storeA.isConfirmed(key)).as(key).isTrue();
                assertThat(storeB.attempts(key)).as("attempts of %s", key).isEqualTo(key.endsWith("0") ? 2 : 1);
            }
        } finally {
            poolA.dispose();
            poolB.dispose();
        }
    }

    private static AmqpConsumer consumer(String name, String queue, JdbcIdempotencyStore store,
            MessageHandler handler) {
        return E2e.consumer(broker, name).store(store)
                .subscribe(Subscription.builder(queue, handler).concurrency(4).maxAttempts(5)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start();
    }
}

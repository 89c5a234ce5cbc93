package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Handler threads are woken only when they wait for work. A handler that waits with
 * {@code LockSupport.parkNanos} (as I/O clients and rate limiters do) sleeps its full time on the runtime's threads,
 * under load, with the JDBC store on PostgreSQL and its group commit on: before, the group commit unparked the thread
 * that had led a batch (answering its own request) and callers that had already seen their answer, and the intake's
 * AQS lock could do the same, so the handler's next park returned at once (86 % of the asked time lost in the run
 * that found it).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HandlerParkOnPostgresIT {

    @Test
    void aHandlersParkSleepsItsFullTimeWhileTheStoreIsBusy() {
        int messages = 1_500;
        long asked = Duration.ofMillis(2).toNanos();
        PostgresSchema schema = PostgresProvider.shared().newSchema(getClass().getSimpleName());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(schema.jdbcUrl());
        config.setUsername(schema.user());
        config.setPassword(schema.password());
        config.setMaximumPoolSize(4);
        AtomicInteger done = new AtomicInteger();
        AtomicInteger early = new AtomicInteger();
        AtomicLong slept = new AtomicLong();
        String q = "parking";
        try (EmbeddedArtemis broker = EmbeddedArtemis.builder().build().start();
             HikariDataSource pool = new HikariDataSource(config)) {
            JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool)
                    .tableName(schema.qualify(JdbcIdempotencyStore.DEFAULT_TABLE_NAME)).build();
            store.createSchema();
            try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
                client.sendBatch(q, messages, i -> "park-" + i);
            }
            try (AmqpConsumer consumer = AmqpConsumer.builder().name("park")
                    .connection(ConnectionSettings.builder(broker.host(), broker.port()).build())
                    .store(store)
                    .subscribe(Subscription.builder(q, e -> {
                        long start = System.nanoTime();
                        LockSupport.parkNanos(asked);
                        long took = System.nanoTime() - start;
                        slept.addAndGet(Math.min(took, asked));
                        if (took < asked) {
                            early.incrementAndGet();
                        }
                        done.incrementAndGet();
                    }).concurrency(4).build())
                    .start()) {
                await().atMost(Duration.ofSeconds(120)).until(() -> done.get() >= messages);
            }
        }
        assertThat(early.get())
                .as("parks cut short: slept %d ms of %d ms asked", slept.get() / 1_000_000,
                        messages * asked / 1_000_000)
                .isZero();
    }
}

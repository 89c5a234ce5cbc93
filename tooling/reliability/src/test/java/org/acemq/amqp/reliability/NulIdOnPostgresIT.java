package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * End to end on PostgreSQL and Artemis: a message whose string message-id holds a NUL character
 * (which PostgreSQL text cannot hold: SQLState 22021) is keyed {@code h:<sha-256>} by the runtime before the store
 * sees it, so it is processed once and settled once, its duplicate is absorbed, and the consumer never pauses for it.
 * (Before, the store turned PostgreSQL's refusal into "store unavailable": the message was released tens of thousands
 * of times and the whole consumer ended paused.)
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class NulIdOnPostgresIT {

    @Test
    void aNulInTheMessageIdIsProcessedOnceAndNeverPausesTheConsumer() {
        PostgresSchema schema = PostgresProvider.shared().newSchema(getClass().getSimpleName());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(schema.jdbcUrl());
        config.setUsername(schema.user());
        config.setPassword(schema.password());
        config.setMaximumPoolSize(4);
        String q = "nul-ids";
        String nul = "j-nul\u0000byte";
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        try (EmbeddedArtemis broker = EmbeddedArtemis.builder().build().start();
             HikariDataSource pool = new HikariDataSource(config)) {
            JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool)
                    .tableName(schema.qualify(JdbcIdempotencyStore.DEFAULT_TABLE_NAME)).build();
            store.createSchema();
            try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
                client.send(q, AmqpTestClient.message("before", "b"), AmqpTestClient.message(nul, "first"),
                        AmqpTestClient.message(nul, "first"), AmqpTestClient.message("after", "a"));
            }
            try (AmqpConsumer consumer = AmqpConsumer.builder().name("nul")
                    .connection(ConnectionSettings.builder(broker.host(), broker.port()).build())
                    .store(store).observer(observer)
                    .subscribe(Subscription.builder(q, e -> handled.add(e.id() + "=" + e.body(String.class))).build())
                    .start()) {
                await().atMost(Duration.ofSeconds(60)).until(() -> observer.settlements().size() == 4);
                assertThat(consumer.health().storeReachable()).isTrue();
                await().until(() -> broker.messageCount(q) == 0);
            }
        }
        assertThat(observer.pauses()).as("never paused").isEmpty();
        assertThat(observer.endings()).containsExactlyInAnyOrder("ACCEPTED/PROCESSED", "ACCEPTED/PROCESSED",
                "ACCEPTED/PROCESSED", "ACCEPTED/DUPLICATE");
        assertThat(handled).hasSize(3).anySatisfy(h -> assertThat(h).matches("[^|]+\\|h:[0-9a-f]{64}=first"));
    }
}

package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalBatchHandler;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The transactional batch handler end to end: Artemis, the runtime's batch subscription, the JDBC store and the
 * application's rows on one PostgreSQL. Batches of 25 are bulk-inserted with their confirms in one transaction; some
 * batches fail whole (rolled back, redelivered), some items fail transiently once or permanently; publishers send some
 * messages twice. Every message's row is written exactly once (the effects table has no key, so a double would show),
 * the permanent ones never, and they are dead-lettered.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TransactionalBatchOnPostgresIT {

    @Test
    void everyMessagesRowIsCommittedOnceWithItsConfirmThroughFailuresAndCopies() throws Exception {
        int n = 400;
        PostgresSchema schema = PostgresProvider.shared().newSchema(getClass().getSimpleName());
        String readings = schema.qualify("readings");
        String q = "tx-batch";
        AtomicInteger calls = new AtomicInteger();
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        try (EmbeddedArtemis broker = EmbeddedArtemis.builder().maxDeliveryAttempts(100).build().start();
             HikariDataSource pool = KeysOnPostgres.pool(schema)) {
            try (Connection c = pool.getConnection()) {
                c.createStatement().execute("CREATE TABLE " + readings + " (id text NOT NULL, body text NOT NULL)");
            }
            JdbcIdempotencyStore store = KeysOnPostgres.store(pool, schema);
            JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(store, pool, (batch, c) -> {
                // every fifth call fails as a whole after writing: rolled back, the batch comes back
                boolean failWhole = calls.incrementAndGet() % 5 == 0;
                Map<Integer, Throwable> failed = new HashMap<>();
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + readings + " VALUES (?, ?)")) {
                    for (int i = 0; i < batch.size(); i++) {
                        Envelope e = batch.get(i);
                        String id = String.valueOf(e.messageId());
                        if (id.endsWith("99")) {
                            failed.put(i, new PermanentMessageException("test: never valid"));
                            continue;
                        }
                        if (id.endsWith("3") && failedOnce.add(id)) {
                            failed.put(i, new IllegalStateException("test: busy"));
                            continue;
                        }
                        ps.setString(1, id);
                        ps.setString(2, e.body(String.class));
                        ps.addBatch();
                    }
                    ps.executeBatch();
                }
                if (failWhole) {
                    throw new IllegalStateException("test: the batch fails after its inserts");
                }
                if (!failed.isEmpty()) {
                    throw new BatchItemsFailedException(failed);
                }
            });
            try (AmqpTestClient client = AmqpTestClient.connect(broker);
                 AmqpConsumer consumer = KeysOnPostgres.consumer(broker, "tx-batch").store(store)
                         .subscribe(Subscription.batchBuilder(q, handler).batchSize(25)
                                 .batchTime(Duration.ofMillis(100)).concurrency(2).prefetch(50).maxAttempts(20)
                                 .retryBackoff(RetryBackoff.none()).inProgressDelay(Duration.ofMillis(100)).build())
                         .start()) {
                List<MessageSpec> messages = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    messages.add(AmqpTestClient.message("r-" + i, "reading " + i));
                    if (i % 40 == 0) {
                        messages.add(AmqpTestClient.message("r-" + i, "reading " + i)); // a publisher's retry
                    }
                }
                client.send(q, messages);
                int permanent = (int) java.util.stream.IntStream.range(0, n).filter(i -> i % 100 == 99).count();
                await().atMost(Duration.ofSeconds(150)).pollInterval(Duration.ofMillis(200))
                        .until(() -> broker.messageCount(q) == 0
                                && broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == permanent
                                && rows(pool, readings) == n - permanent);
                Map<String, Integer> counts = counts(pool, readings);
                assertThat(counts).as("rows per message").hasSize(n - permanent)
                        .allSatisfy((id, count) -> assertThat(count).as("rows of %s", id).isEqualTo(1));
                assertThat(counts).doesNotContainKeys("r-99", "r-199", "r-299", "r-399");
                for (int i = 0; i < n; i++) {
                    String key = q + "|s:r-" + i;
                    assertThat(store.isConfirmed(key)).as("confirmed: %s", key).isEqualTo(i % 100 != 99);
                }
                assertThat(calls.get()).as("batch calls (some failed whole)").isGreaterThanOrEqualTo(n / 25);
                List<Object> dead = new ArrayList<>();
                client.drain(EmbeddedArtemis.deadLetterQueueName(q)).forEach(m -> dead.add(m.messageId()));
                assertThat(dead).containsExactlyInAnyOrder("r-99", "r-199", "r-299", "r-399");
            }
        }
    }

    private static long rows(HikariDataSource pool, String table) throws Exception {
        try (Connection c = pool.getConnection(); ResultSet rs = c.createStatement()
                .executeQuery("SELECT count(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static Map<String, Integer> counts(HikariDataSource pool, String table) throws Exception {
        Map<String, Integer> out = new HashMap<>();
        try (Connection c = pool.getConnection(); ResultSet rs = c.createStatement()
                .executeQuery("SELECT id, count(*) FROM " + table + " GROUP BY id")) {
            while (rs.next()) {
                out.put(rs.getString(1), rs.getInt(2));
            }
        }
        return out;
    }
}

package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fingerprint conflicts on PostgreSQL: a copy with a known business key and another body is a conflict on the JDBC
 * store too, across a restart of the consumer and of its store instance (the fingerprint lives in the table): counted
 * and logged by default, rejected and dead-lettered when the subscription chooses so. Needs a JDBC store that
 * {@linkplain JdbcIdempotencyStore#recordsFingerprints() records fingerprints}.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class FingerprintConflictOnPostgresIT {

    private static PostgresSchema schema;
    private static HikariDataSource pool;
    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void start() {
        schema = PostgresProvider.shared().newSchema(FingerprintConflictOnPostgresIT.class.getSimpleName());
        pool = KeysOnPostgres.pool(schema);
        broker = EmbeddedArtemis.builder().build().start();
        client = AmqpTestClient.connect(broker);
    }

    @AfterAll
    static void stop() {
        client.close();
        broker.close();
        pool.close();
        schema.close();
    }

    private static JdbcIdempotencyStore store() {
        JdbcIdempotencyStore store = KeysOnPostgres.store(pool, schema);
        assertThat(store.recordsFingerprints()).as("the JDBC store records fingerprints").isTrue();
        return store;
    }

    private static AmqpConsumer start(String q, Fingerprint fingerprint, List<String> handled,
                                      RecordingObserver observer) {
        return KeysOnPostgres.consumer(broker, "orders-service").store(store()).observer(observer)
                .subscribe(Subscription.builder(q, e -> handled.add(e.body(String.class))).name("orders")
                        .key(KeySource.applicationProperty("orderId")).fingerprint(fingerprint).build())
                .start();
    }

    /** @return the value of the one column of the row whose name holds "fingerprint" */
    private static Object fingerprintColumn(String id) {
        Map<String, Object> row = KeysOnPostgres.row(pool, schema, id);
        assertThat(row).as("row " + id).isNotEmpty();
        List<Map.Entry<String, Object>> columns = row.entrySet().stream()
                .filter(c -> c.getKey().contains("fingerprint")).toList();
        assertThat(columns).as("fingerprint column of " + row.keySet()).hasSize(1);
        Object value = columns.get(0).getValue();
        return value instanceof byte[] bytes ? java.util.HexFormat.of().formatHex(bytes) : value;
    }

    @Test
    void aDifferingCopyIsCountedAndLoggedAcrossARestart() {
        String q = "fp.orders";
        String key = q + "|p:orderId=s:o-1";
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver first = new RecordingObserver();
        RecordingObserver second = new RecordingObserver();
        try (KeysOnPostgres.StandardErrorTee log = new KeysOnPostgres.StandardErrorTee()) {
            try (AmqpConsumer consumer = start(q, Fingerprint.body(), handled, first)) {
                client.send(q, ScopesOnPostgresIT.order("msg-1", "o-1", "o-1: 3 books"));
                await().atMost(Duration.ofSeconds(60)).until(() ->
                        first.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                client.send(q, ScopesOnPostgresIT.order("msg-1-retry", "o-1", "o-1: 3 books"),
                        ScopesOnPostgresIT.order("msg-1-changed", "o-1", "o-1: 4 books"));
                await().atMost(Duration.ofSeconds(60)).until(() ->
                        first.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1
                                && first.count(Outcome.ACCEPTED, SettleReason.CONFLICT) == 1);
            }
            assertThat(first.conflicts()).singleElement().satisfies(c -> {
                assertThat(c.key()).isEqualTo(key);
                assertThat(c.recordedFingerprint()).matches("[0-9a-f]{32}");
                assertThat(c.fingerprint()).matches("[0-9a-f]{32}").isNotEqualTo(c.recordedFingerprint());
            });
            String recorded = first.conflicts().get(0).recordedFingerprint();
            // the table holds the fingerprint of the claim that confirmed the key
            assertThat(fingerprintColumn(key)).isEqualTo(recorded);

            // restart: a new consumer and a new store instance on the same table
            try (AmqpConsumer consumer = start(q, Fingerprint.body(), handled, second)) {
                client.send(q, ScopesOnPostgresIT.order("msg-1-changed-again", "o-1", "o-1: 5 books"));
                await().atMost(Duration.ofSeconds(60)).until(() ->
                        second.count(Outcome.ACCEPTED, SettleReason.CONFLICT) == 1);
            }
            assertThat(second.conflicts()).singleElement().satisfies(c -> {
                assertThat(c.key()).isEqualTo(key);
                assertThat(c.recordedFingerprint()).isEqualTo(recorded);
            });
            assertThat(log.lines("arrived with fingerprint")).hasSize(2)
                    .allSatisfy(line -> assertThat(line).contains("WARN").contains("o-1").contains(recorded));
        }
        assertThat(handled).containsExactly("o-1: 3 books");
        assertThat(fingerprintColumn(key)).as("a conflicting copy does not replace the fingerprint")
                .isEqualTo(first.conflicts().get(0).recordedFingerprint());
        assertThat(broker.messageCount(q)).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void aSubscriptionThatRejectsConflictsDeadLettersTheDifferingCopyAcrossARestart() {
        String q = "fp.strict-orders";
        Fingerprint strict = Fingerprint.body().onConflict(Fingerprint.Action.REJECT);
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver first = new RecordingObserver();
        RecordingObserver second = new RecordingObserver();
        try (AmqpConsumer consumer = start(q, strict, handled, first)) {
            client.send(q, ScopesOnPostgresIT.order("msg-1", "o-1", "o-1: 3 books"));
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    first.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
        }
        try (AmqpConsumer consumer = start(q, strict, handled, second)) {
            client.send(q, ScopesOnPostgresIT.order("msg-1-changed", "o-1", "o-1: 4 books"),
                    ScopesOnPostgresIT.order("msg-1-retry", "o-1", "o-1: 3 books"));
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    second.count(Outcome.REJECTED, SettleReason.CONFLICT) == 1
                            && second.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
        }
        assertThat(handled).containsExactly("o-1: 3 books");
        assertThat(second.conflicts()).singleElement()
                .satisfies(c -> assertThat(c.key()).isEqualTo(q + "|p:orderId=s:o-1"));
        String dlq = EmbeddedArtemis.deadLetterQueueName(q);
        await().until(() -> broker.messageCount(dlq) == 1);
        List<ReceivedMessage> dead = client.drain(dlq);
        assertThat(dead).singleElement().satisfies(m -> {
            assertThat(m.messageId()).isEqualTo("msg-1-changed");
            assertThat(m.bodyAsString()).isEqualTo("o-1: 4 books");
        });
        assertThat(broker.messageCount(q)).isZero();
    }
}

package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scopes on PostgreSQL (the JDBC store) and embedded Artemis: two services with their own consumers
 * and their own store instances on one table each handle every event once; a subscription keyed by a business
 * property absorbs a publisher's retry with a new message-id, also after the consumer and its store restart.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ScopesOnPostgresIT {

    private static final int EVENTS = 100;

    private static PostgresSchema schema;
    private static HikariDataSource pool;
    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void start() {
        schema = PostgresProvider.shared().newSchema(ScopesOnPostgresIT.class.getSimpleName());
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

    private static Map<String, AtomicInteger> counter() {
        return new ConcurrentHashMap<>();
    }

    private static void count(Map<String, AtomicInteger> runs, Object messageId) {
        runs.computeIfAbsent(String.valueOf(messageId), k -> new AtomicInteger()).incrementAndGet();
    }

    @Test
    void twoServicesSharingOneTableEachRunOncePerEvent() {
        Map<String, AtomicInteger> shipping = counter();
        Map<String, AtomicInteger> invoicing = counter();
        RecordingObserver observerS = new RecordingObserver();
        RecordingObserver observerI = new RecordingObserver();
        JdbcIdempotencyStore storeS = KeysOnPostgres.store(pool, schema);
        JdbcIdempotencyStore storeI = KeysOnPostgres.store(pool, schema);
        assertThat(storeS.tableName()).isEqualTo(storeI.tableName());
        try (AmqpConsumer shippingService = KeysOnPostgres.consumer(broker, "shipping").store(storeS)
                .observer(observerS)
                .subscribe(Subscription.builder("shipping.orders", e -> count(shipping, e.messageId())).build())
                .start();
             AmqpConsumer invoicingService = KeysOnPostgres.consumer(broker, "invoicing").store(storeI)
                     .observer(observerI)
                     .subscribe(Subscription.builder("invoicing.orders", e -> count(invoicing, e.messageId()))
                             .build())
                     .start()) {
            // the same events (same message-ids) reach both services' queues
            client.sendBatch("shipping.orders", EVENTS, i -> "order-" + i, i -> "order body " + i);
            client.sendBatch("invoicing.orders", EVENTS, i -> "order-" + i, i -> "order body " + i);
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    observerS.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS
                            && observerI.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS);

            // copies re-sent to one service's queue are absorbed there
            client.sendBatch("invoicing.orders", EVENTS, i -> "order-" + i, i -> "order body " + i);
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    observerI.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);
            await().until(() -> broker.messageCount("shipping.orders") == 0
                    && broker.messageCount("invoicing.orders") == 0);
            assertThat(shippingService.health().healthy()).isTrue();
            assertThat(invoicingService.health().healthy()).isTrue();
        }
        assertThat(shipping).hasSize(EVENTS).allSatisfy((id, n) -> assertThat(n).hasValue(1));
        assertThat(invoicing).hasSize(EVENTS).allSatisfy((id, n) -> assertThat(n).hasValue(1));
        assertThat(observerS.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isZero();
        // one table, one row per service and event: the keys are scoped to each service's queue
        assertThat(KeysOnPostgres.rowsStartingWith(pool, schema, "shipping.orders|")).isEqualTo(EVENTS);
        assertThat(KeysOnPostgres.rowsStartingWith(pool, schema, "invoicing.orders|")).isEqualTo(EVENTS);
        assertThat(KeysOnPostgres.row(pool, schema, "shipping.orders|s:order-0")).containsEntry("state", 1);
        assertThat(KeysOnPostgres.row(pool, schema, "invoicing.orders|s:order-0")).containsEntry("state", 1);
    }

    @Test
    void aRetryWithANewMessageIdIsAbsorbedByTheBusinessKeyAlsoAfterARestart() {
        String q = "bk.orders";
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver first = new RecordingObserver();
        RecordingObserver second = new RecordingObserver();
        try (AmqpConsumer consumer = ordersConsumer(q, KeysOnPostgres.store(pool, schema), handled, first)) {
            client.send(q, order("msg-1", "o-1", "o-1: 3 books"), order("msg-2", "o-2", "o-2: 1 pen"));
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    first.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 2);
            client.send(q, order("msg-1-retry", "o-1", "o-1: 3 books"));
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    first.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 1);
            assertThat(consumer.health().healthy()).isTrue();
        }
        // the service restarts: a new consumer and a new store instance on the same table
        try (AmqpConsumer consumer = ordersConsumer(q, KeysOnPostgres.store(pool, schema), handled, second)) {
            client.send(q, order("msg-1-retry-2", "o-1", "o-1: 3 books"), order("msg-2-retry", "o-2", "o-2: 1 pen"));
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    second.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 2);
            assertThat(consumer.health().healthy()).isTrue();
        }
        assertThat(handled).containsExactlyInAnyOrder("o-1: 3 books", "o-2: 1 pen");
        assertThat(second.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isZero();
        assertThat(KeysOnPostgres.row(pool, schema, q + "|p:orderId=s:o-1")).containsEntry("state", 1);
        assertThat(KeysOnPostgres.row(pool, schema, q + "|p:orderId=s:o-2")).containsEntry("state", 1);
        assertThat(KeysOnPostgres.rowsStartingWith(pool, schema, q + "|")).isEqualTo(2);
        assertThat(broker.messageCount(q)).isZero();
    }

    static AmqpTestClient.MessageSpec order(String messageId, String orderId, String body) {
        return AmqpTestClient.message(messageId, body).property("orderId", orderId);
    }

    static AmqpConsumer ordersConsumer(String q, JdbcIdempotencyStore store, List<String> handled,
                                       RecordingObserver observer) {
        return KeysOnPostgres.consumer(broker, "orders-service").store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> handled.add(e.body(String.class))).name("orders")
                        .key(KeySource.applicationProperty("orderId")).build())
                .start();
    }
}

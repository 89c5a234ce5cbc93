package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqSender;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.transaction.annotation.Transactional;

/**
 * The starter on real PostgreSQL: the JDBC store on the application's DataSource, the shipped Flyway and Liquibase
 * migrations (same schema as the store's own), health DOWN while the store is unreachable, and transactional
 * listeners (single-message and batch) whose database effects happen exactly once, through Spring's transaction
 * management, across a killed session and a lease takeover.
 */
@Timeout(240)
class JdbcStarterIT {

    static EmbeddedArtemis broker;
    static final List<PostgresSchema> schemas = new ArrayList<>();
    final List<ConfigurableApplicationContext> apps = new ArrayList<>();

    @BeforeAll
    static void start() {
        broker = SharedBroker.get();
    }

    @AfterEach
    void closeApps() {
        apps.forEach(ConfigurableApplicationContext::close);
    }

    @AfterAll
    static void dropSchemas() {
        schemas.forEach(PostgresSchema::close);
    }

    static PostgresSchema schema(String hint) {
        PostgresSchema s = PostgresProvider.shared().newSchema(hint);
        schemas.add(s);
        return s;
    }

    ConfigurableApplicationContext start(Class<?> app, PostgresSchema schema, String... properties) {
        List<String> all = new ArrayList<>(List.of(SharedBroker.connectionProperties()));
        all.add("spring.datasource.url=" + schema.jdbcUrl());
        if (schema.user() != null) {
            all.add("spring.datasource.username=" + schema.user());
        }
        if (schema.password() != null) {
            all.add("spring.datasource.password=" + schema.password());
        }
        all.add("acemq.store.type=jdbc");
        all.add("spring.flyway.enabled=false");
        all.add("spring.liquibase.enabled=false");
        all.addAll(List.of(properties));
        ConfigurableApplicationContext context = new SpringApplicationBuilder(app).web(WebApplicationType.NONE)
                .properties(all.toArray(String[]::new)).run();
        apps.add(context);
        return context;
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class StoreOnlyApp {
    }

    // ------------------------------------------------------------------------------------------------ migrations

    /** Columns, constraints and indexes of {@code acemq_idempotency} in a schema, with the schema name removed. */
    static List<String> definition(JdbcTemplate jdbc, String schema) {
        return definition(jdbc, schema, "acemq_idempotency");
    }

    /** Columns (with defaults), constraints and indexes of a table in a schema, with the schema name removed. */
    static List<String> definition(JdbcTemplate jdbc, String schema, String table) {
        List<String> out = new ArrayList<>();
        out.addAll(jdbc.queryForList("SELECT 'column ' || column_name || ' ' || data_type || ' nullable=' "
                + "|| is_nullable || ' #' || ordinal_position || (CASE WHEN column_default IS NULL THEN '' ELSE "
                + "' default ' || column_default END) FROM information_schema.columns WHERE table_schema = ? "
                + "AND table_name = ? ORDER BY ordinal_position", String.class, schema, table));
        out.addAll(jdbc.queryForList("SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(c.oid) "
                + "FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = "
                + "t.relnamespace WHERE n.nspname = ? AND t.relname = ? ORDER BY conname",
                String.class, schema, table));
        out.addAll(jdbc.queryForList("SELECT 'index ' || replace(replace(indexdef, ? || '.', ''), '\"', '') "
                + "FROM pg_indexes WHERE schemaname = ? AND tablename = ? ORDER BY indexname",
                String.class, schema, schema, table));
        return out;
    }

    List<String> storesOwnSchema() {
        PostgresSchema reference = schema("reference");
        JdbcIdempotencyStore.builder(reference.dataSource()).build().createSchema();
        return definition(new JdbcTemplate(reference.dataSource()), reference.name());
    }

    /** The outbox table as the store's own createSchema() makes it. */
    List<String> storesOwnOutbox() {
        PostgresSchema reference = schema("reference-outbox");
        JdbcIdempotencyStore.builder(reference.dataSource()).build().createSchema();
        return definition(new JdbcTemplate(reference.dataSource()), reference.name(), "acemq_outbox");
    }

    static List<String> outboxDefinition(JdbcTemplate jdbc, String schema) {
        return definition(jdbc, schema, "acemq_outbox");
    }

    static void storeWorks(IdempotencyStore store) {
        String id = "s:" + UUID.randomUUID();
        assertThat(store.tryClaim(id)).isEqualTo(ClaimResult.CLAIMED);
        store.confirm(id);
        assertThat(store.tryClaim(id)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    static final String FINGERPRINT = "0123456789abcdef0123456789abcdef";

    /** Columns of {@code acemq_idempotency} only, as information_schema.columns has them. */
    static List<String> columns(JdbcTemplate jdbc, String schema) {
        return definition(jdbc, schema).stream().filter(line -> line.startsWith("column ")).toList();
    }

    static Flyway flyway(DataSource dataSource, String location, String target) {
        return Flyway.configure().dataSource(dataSource).locations(location).table("acemq_schema_history")
                .target(target).load();
    }

    @Test
    void theFlywayMigrationsCreateTheStoresOwnSchemaAndTheStoreRunsOnIt() {
        PostgresSchema schema = schema("flyway");
        ConfigurableApplicationContext app = start(StoreOnlyApp.class, schema, "spring.flyway.enabled=true",
                "spring.flyway.locations=classpath:db/acemq/flyway", "acemq.store.jdbc.initialize-schema=false");
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        assertThat(jdbc.queryForList("SELECT version || ' ' || script FROM flyway_schema_history WHERE success "
                + "AND version IS NOT NULL ORDER BY installed_rank", String.class)).containsExactly(
                "1 V1__acemq_idempotency.sql", "2 V2__acemq_idempotency_fingerprint.sql", "3 V3__acemq_outbox.sql");
        List<String> own = storesOwnSchema();
        assertThat(columns(jdbc, schema.name())).as("information_schema.columns").contains(
                "column fingerprint text nullable=YES #7").isEqualTo(own.stream()
                .filter(line -> line.startsWith("column ")).toList());
        assertThat(definition(jdbc, schema.name())).isNotEmpty().isEqualTo(own);
        assertThat(outboxDefinition(jdbc, schema.name())).as("the outbox table (V3)").isNotEmpty()
                .contains("index CREATE INDEX acemq_outbox_pending_idx ON acemq_outbox USING btree (created_at) WHERE "
                        + "(dispatched_at IS NULL)").isEqualTo(storesOwnOutbox());
        storeWorks(app.getBean(IdempotencyStore.class));
        assertThat(app.getBean(JdbcIdempotencyStore.class).acquire("s:fp", FINGERPRINT).fingerprint())
                .isEqualTo(FINGERPRINT);
    }

    @Test
    void theVersionedFlywayMigrationsRunInAHistoryOfTheirOwnAndUpgradeAVersion1Table() {
        PostgresSchema schema = schema("flyway-upgrade");
        DataSource dataSource = schema.dataSource();
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        flyway(dataSource, "classpath:db/acemq/flyway", "1").migrate();
        assertThat(columns(jdbc, schema.name())).isNotEmpty().noneMatch(line -> line.contains("fingerprint"));
        jdbc.update("INSERT INTO acemq_idempotency (id, state, attempts, expires_at) "
                + "VALUES ('s:before', 1, 1, now() + interval '1 hour')");

        assertThat(flyway(dataSource, "classpath:db/acemq/flyway", "latest").migrate().migrationsExecuted)
                .as("V2 and V3").isEqualTo(2);
        assertThat(definition(jdbc, schema.name())).isEqualTo(storesOwnSchema());
        assertThat(outboxDefinition(jdbc, schema.name())).isEqualTo(storesOwnOutbox());
        assertThat(jdbc.queryForObject("SELECT count(*) FROM acemq_schema_history WHERE success AND version = '2'",
                Integer.class)).isEqualTo(1);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
        assertThat(store.acquire("s:before", FINGERPRINT)).as("a row written before the column existed")
                .isEqualTo(new Claim("s:before", ClaimResult.ALREADY_CONFIRMED, 1, null));
        assertThat(store.acquire("s:after", FINGERPRINT).fingerprint()).isEqualTo(FINGERPRINT);
    }

    @Test
    void theRepeatableFlywayMigrationCreatesOrUpgradesTheTableInTheApplicationsHistory() {
        PostgresSchema fresh = schema("flyway-repeatable");
        ConfigurableApplicationContext app = start(StoreOnlyApp.class, fresh, "spring.flyway.enabled=true",
                "spring.flyway.locations=classpath:db/acemq/flyway-repeatable",
                "acemq.store.jdbc.initialize-schema=false");
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM flyway_schema_history WHERE success AND script = "
                + "'R__acemq_idempotency.sql'", Integer.class)).isEqualTo(1);
        List<String> own = storesOwnSchema();
        assertThat(definition(jdbc, fresh.name())).isEqualTo(own);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM flyway_schema_history WHERE success AND script = "
                + "'R__acemq_outbox.sql'", Integer.class)).isEqualTo(1);
        assertThat(outboxDefinition(jdbc, fresh.name())).isNotEmpty().isEqualTo(storesOwnOutbox());
        storeWorks(app.getBean(IdempotencyStore.class));

        PostgresSchema old = schema("flyway-repeatable-old");
        flyway(old.dataSource(), "classpath:db/acemq/flyway", "1").migrate();
        // baselineOnMigrate: the schema is not empty, as an application's that has a history of its own
        Flyway.configure().dataSource(old.dataSource()).locations("classpath:db/acemq/flyway-repeatable")
                .baselineOnMigrate(true).load().migrate();
        assertThat(definition(new JdbcTemplate(old.dataSource()), old.name())).as("a version 1 table, upgraded")
                .isEqualTo(own);
    }

    @Test
    void theStoresOwnSchemaUpgradesATableOfTheEarlierVersion() {
        PostgresSchema schema = schema("ddl-upgrade");
        DataSource dataSource = schema.dataSource();
        flyway(dataSource, "classpath:db/acemq/flyway", "1").migrate();
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        assertThat(columns(jdbc, schema.name())).noneMatch(line -> line.contains("fingerprint"));
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
        store.createSchema();
        assertThat(definition(jdbc, schema.name())).isEqualTo(storesOwnSchema());
        store.createSchema();
        assertThat(definition(jdbc, schema.name())).as("running it again changes nothing").isEqualTo(storesOwnSchema());
        assertThat(store.acquire("s:1", FINGERPRINT).fingerprint()).isEqualTo(FINGERPRINT);
    }

    @Test
    void theLiquibaseChangelogCreatesTheStoresOwnSchemaAndTheStoreRunsOnIt() {
        PostgresSchema schema = schema("liquibase");
        ConfigurableApplicationContext app = start(StoreOnlyApp.class, schema, "spring.liquibase.enabled=true",
                "spring.liquibase.change-log=classpath:db/acemq/liquibase/acemq-idempotency.sql",
                "acemq.store.jdbc.initialize-schema=false");
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        assertThat(jdbc.queryForList("SELECT id FROM databasechangelog WHERE author = 'acemq' ORDER BY orderexecuted",
                String.class)).containsExactly("acemq-idempotency-1", "acemq-idempotency-2", "acemq-outbox-1");
        assertThat(definition(jdbc, schema.name())).isNotEmpty().isEqualTo(storesOwnSchema());
        assertThat(outboxDefinition(jdbc, schema.name())).isNotEmpty().isEqualTo(storesOwnOutbox());
        storeWorks(app.getBean(IdempotencyStore.class));
    }

    @Test
    void withoutMigrationsTheStoreCreatesItsSchemaOnTheApplicationsDataSource() {
        PostgresSchema schema = schema("init");
        ConfigurableApplicationContext app = start(StoreOnlyApp.class, schema, "acemq.store.jdbc.table-name=orders_seen",
                "acemq.store.lease=10s");
        JdbcIdempotencyStore store = app.getBean(JdbcIdempotencyStore.class);
        assertThat(store.tableName()).isEqualTo("orders_seen");
        assertThat(store.leaseDuration()).isEqualTo(Duration.ofSeconds(10));
        storeWorks(store);
        assertThat(new JdbcTemplate(app.getBean(DataSource.class)).queryForObject(
                "SELECT count(*) FROM orders_seen WHERE state = 1", Integer.class)).isEqualTo(1);
        assertThat(store.outboxTableName()).as("the outbox next to it").isEqualTo("orders_seen_outbox");
        assertThat(store.outboxStatus().pending()).as("created with the store's table").isZero();
    }

    @Test
    void theOutboxTableNameIsASetting() {
        PostgresSchema schema = schema("outbox-name");
        ConfigurableApplicationContext app = start(StoreOnlyApp.class, schema,
                "acemq.store.jdbc.outbox-table-name=" + schema.name() + ".sent_messages");
        JdbcIdempotencyStore store = app.getBean(JdbcIdempotencyStore.class);
        assertThat(store.outboxTableName()).isEqualTo(schema.name() + ".sent_messages");
        assertThat(new JdbcTemplate(app.getBean(DataSource.class)).queryForObject(
                "SELECT count(*) FROM " + schema.name() + ".sent_messages WHERE dispatched_at IS NULL", Integer.class))
                .as("initialize-schema created it").isZero();
    }

    // ------------------------------------------------------------------------------------- health and the store

    static class Recorder {
        final java.util.Set<String> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();

        @AcemqListener(address = "${test.queue}")
        void onMessage(String body) {
            seen.add(body);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Recorder.class)
    static class RecorderApp {
    }

    @Test
    void healthGoesDownWhileTheStoreIsUnreachableAndUpWhenItAnswersAgain() {
        String queue = "jdbc-health-" + UUID.randomUUID();
        ConfigurableApplicationContext app = start(RecorderApp.class, schema("health"), "test.queue=" + queue,
                "acemq.consumer.max-store-retry-delay=300ms");
        ActuatorHealth health = ActuatorHealth.of(app);
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        await().atMost(Duration.ofSeconds(30)).until(() -> health.status().equals("UP"));

        // every store statement now fails (42P01), as when the database is gone for this consumer
        jdbc.execute("ALTER TABLE acemq_idempotency RENAME TO acemq_idempotency_away");
        try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), SharedBroker.USER,
                SharedBroker.PASSWORD)) {
            client.send(queue, AmqpTestClient.message("m-1", "during the outage"));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                var h = health.health();
                assertThat(h.status()).isEqualTo("DOWN");
                assertThat(h.details()).containsEntry("storeReachable", false).containsEntry("connected", true);
            });
            assertThat(app.getBean(Recorder.class).seen).as("nothing processed without the store").isEmpty();
        } finally {
            jdbc.execute("ALTER TABLE acemq_idempotency_away RENAME TO acemq_idempotency");
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> health.status().equals("UP"));
        await().atMost(Duration.ofSeconds(30)).until(() -> app.getBean(Recorder.class).seen
                .contains("during the outage"));
    }

    // -------------------------------------------------------------------------------- transactional listeners

    /** Effects in the store's database, written through Spring's JdbcTemplate; a few fail on their first try. */
    static class Payments {
        final JdbcTemplate jdbc;

        Payments(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @AcemqListener(address = "${test.queue}", concurrency = "4", databaseTransaction = "true")
        void onPayment(String body, Envelope envelope) {
            jdbc.update("INSERT INTO effects (id, attempt) VALUES (?, ?)", body, envelope.attempt());
            if (envelope.attempt() == 1 && body.startsWith("kill")) {
                // the session dies mid-transaction, as if the process had crashed before the commit
                jdbc.queryForObject("SELECT pg_terminate_backend(pg_backend_pid())", Boolean.class);
            }
            if (envelope.attempt() == 1 && body.startsWith("fail")) {
                throw new IllegalStateException("payment provider timed out after the insert");
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Payments.class)
    static class PaymentsApp {
    }

    @Test
    void aTransactionalListenersEffectsHappenExactlyOnceAcrossKilledSessionsFailuresAndDuplicates() {
        String queue = "jdbc-payments-" + UUID.randomUUID();
        PostgresSchema schema = schema("payments");
        new JdbcTemplate(schema.dataSource()).execute("CREATE TABLE effects (id text NOT NULL, attempt int NOT NULL)");
        ConfigurableApplicationContext app = start(PaymentsApp.class, schema, "test.queue=" + queue);
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            bodies.add((i % 10 == 0 ? "kill-" : i % 10 == 1 ? "fail-" : "pay-") + i);
        }
        try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), SharedBroker.USER,
                SharedBroker.PASSWORD)) {
            for (String body : bodies) {
                client.send(queue, AmqpTestClient.message(body, body));
            }
            for (String body : bodies.subList(0, 10)) {
                client.send(queue, AmqpTestClient.message(body, body)); // duplicates, some while in flight
            }
            await().atMost(Duration.ofSeconds(90)).until(() -> broker.messageCount(queue) == 0
                    && jdbc.queryForObject("SELECT count(DISTINCT id) FROM effects", Integer.class) == 30);
        }
        assertThat(jdbc.queryForObject("SELECT count(*) FROM effects", Integer.class))
                .as("one committed effect per payment").isEqualTo(30);
        assertThat(jdbc.queryForList("SELECT id FROM effects WHERE attempt > 1", String.class))
                .as("killed and failed first attempts left nothing; their retries did the work")
                .hasSize(6).allMatch(id -> id.startsWith("kill") || id.startsWith("fail"));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM acemq_idempotency WHERE state = 1 AND owner IS NOT NULL",
                Integer.class)).as("every id confirmed inside the listener's transaction").isEqualTo(30);
    }

    // ------------------------------------------------------------- messages sent in a database transaction

    /** A participant in the listener's transaction whose failure the listener catches: the transaction is doomed. */
    static class Risky {
        @Transactional
        public void reserveStock(String order) {
            throw new IllegalStateException("no stock for " + order);
        }
    }

    /** Writes a row, sends an audit message and returns an event, in one database transaction. */
    static class OrdersWithEvents {
        final JdbcTemplate jdbc;
        final Risky risky;

        OrdersWithEvents(JdbcTemplate jdbc, Risky risky) {
            this.jdbc = jdbc;
            this.risky = risky;
        }

        @AcemqListener(address = "${test.queue}", concurrency = "4", databaseTransaction = "true",
                retryBackoffFirst = "0")
        @SendTo("${test.queue}.events")
        String onOrder(String body, Envelope envelope, AcemqSender sender) {
            jdbc.update("INSERT INTO effects (id, attempt) VALUES (?, ?)", body, envelope.attempt());
            sender.send(envelope.address() + ".audit", "audited " + body);
            if (envelope.attempt() == 1 && body.startsWith("fail")) {
                throw new IllegalStateException("payment provider timed out after the send");
            }
            if (envelope.attempt() == 1 && body.startsWith("doomed")) {
                try {
                    risky.reserveStock(body);
                } catch (IllegalStateException e) {
                    // caught, but the transaction is rollback-only now: Spring rolls it back at the end
                }
            }
            return "accepted " + body;
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({OrdersWithEvents.class, Risky.class})
    static class OrdersWithEventsApp {
    }

    @Test
    void messagesATransactionalListenerSendsAreWrittenToTheOutboxInItsTransactionAndDispatchedOnce() {
        String queue = "jdbc-outbox-" + UUID.randomUUID();
        PostgresSchema schema = schema("outbox");
        new JdbcTemplate(schema.dataSource()).execute("CREATE TABLE effects (id text NOT NULL, attempt int NOT NULL)");
        ConfigurableApplicationContext app = start(OrdersWithEventsApp.class, schema, "test.queue=" + queue);
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            bodies.add((i % 6 == 0 ? "fail-" : i % 6 == 1 ? "doomed-" : "order-") + i);
        }
        try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), SharedBroker.USER,
                SharedBroker.PASSWORD)) {
            for (String body : bodies) {
                client.send(queue, AmqpTestClient.message(body, body));
            }
            for (String body : bodies.subList(0, 4)) {
                client.send(queue, AmqpTestClient.message(body, body)); // duplicates, some while in flight
            }
            await().atMost(Duration.ofSeconds(90)).until(() -> broker.messageCount(queue) == 0
                    && jdbc.queryForObject("SELECT count(*) FROM acemq_outbox WHERE dispatched_at IS NOT NULL",
                            Integer.class) == 24);
            List<AmqpTestClient.ReceivedMessage> events = client.receiveAll(queue + ".events", Duration.ofSeconds(2));
            List<AmqpTestClient.ReceivedMessage> audit = client.receiveAll(queue + ".audit", Duration.ofSeconds(2));
            // a copy of an order arriving while its entries are dispatched may dispatch them again: with the same
            // message-id, which an idempotent receiver absorbs (docs/sending.md); so distinct ids are what counts
            Map<String, String> eventsById = byMessageId(events);
            assertThat(eventsById.values()).as("one event per order, none from the attempts that failed or rolled "
                    + "back").containsExactlyInAnyOrderElementsOf(bodies.stream().map(b -> "accepted " + b).toList());
            assertThat(byMessageId(audit).values())
                    .containsExactlyInAnyOrderElementsOf(bodies.stream().map(b -> "audited " + b).toList());
            assertThat(eventsById.keySet())
                    .as("each event is the outbox row the listener's transaction wrote (position 1: after the audit)")
                    .containsExactlyInAnyOrderElementsOf(jdbc.queryForList(
                            "SELECT message_id FROM acemq_outbox WHERE position = 1", String.class));
        }
        assertThat(jdbc.queryForObject("SELECT count(*) FROM effects", Integer.class))
                .as("one committed effect per order").isEqualTo(12);
        assertThat(jdbc.queryForList("SELECT id FROM effects WHERE attempt > 1", String.class))
                .as("the failed and the doomed first attempts left nothing, neither rows nor outbox entries")
                .hasSize(4).allMatch(id -> id.startsWith("fail") || id.startsWith("doomed"));
        assertThat(jdbc.queryForObject("SELECT count(*) FROM acemq_outbox", Integer.class))
                .as("two entries per order, written once").isEqualTo(24);
    }

    /**
     * A batch listener in one database transaction: bulk-inserts a row per message and sends an audit message per
     * message. A batch holding a "fail" message fails whole on its first attempt (after its inserts and sends); a "bad"
     * message is named in a {@link BatchItemsFailedException} (permanent) and its row is not written.
     */
    static class ReadingsInBatches {
        final JdbcTemplate jdbc;

        ReadingsInBatches(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @AcemqListener(address = "${test.queue}", batch = "true", batchSize = "10", batchTime = "50ms",
                databaseTransaction = "true", retryBackoffFirst = "0")
        void onReadings(List<String> bodies, List<Envelope> envelopes) {
            List<Object[]> rows = new ArrayList<>();
            Map<Integer, Throwable> bad = new HashMap<>();
            boolean fail = false;
            for (int i = 0; i < bodies.size(); i++) {
                String body = bodies.get(i);
                if (body.startsWith("bad")) {
                    bad.put(i, new org.acemq.amqp.api.PermanentMessageException("unreadable " + body));
                    continue;
                }
                rows.add(new Object[] {body, envelopes.get(i).attempt()});
                envelopes.get(i).send(envelopes.get(i).address() + ".audit",
                        org.acemq.amqp.api.OutgoingMessage.of("audited " + body));
                fail |= body.startsWith("fail") && envelopes.get(i).attempt() == 1;
            }
            jdbc.batchUpdate("INSERT INTO effects (id, attempt) VALUES (?, ?)", rows);
            if (fail) {
                throw new IllegalStateException("the batch's bulk insert timed out after its sends");
            }
            if (!bad.isEmpty()) {
                throw new org.acemq.amqp.api.BatchItemsFailedException(bad);
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(ReadingsInBatches.class)
    static class ReadingsInBatchesApp {
    }

    @Test
    void aBatchListenersRowsConfirmsAndSendsCommitTogetherInOneDatabaseTransaction() {
        String queue = "jdbc-batch-" + UUID.randomUUID();
        PostgresSchema schema = schema("batch");
        new JdbcTemplate(schema.dataSource()).execute("CREATE TABLE effects (id text NOT NULL, attempt int NOT NULL)");
        ConfigurableApplicationContext app = start(ReadingsInBatchesApp.class, schema, "test.queue=" + queue);
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            bodies.add((i % 13 == 0 ? "fail-" : i % 13 == 5 ? "bad-" : "reading-") + i);
        }
        List<String> good = bodies.stream().filter(b -> !b.startsWith("bad")).toList();
        try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), SharedBroker.USER,
                SharedBroker.PASSWORD)) {
            for (String body : bodies) {
                client.send(queue, AmqpTestClient.message(body, body));
            }
            for (String body : bodies.subList(0, 5)) {
                client.send(queue, AmqpTestClient.message(body, body)); // duplicates
            }
            await().atMost(Duration.ofSeconds(90)).until(() -> broker.messageCount(queue) == 0
                    && jdbc.queryForObject("SELECT count(*) FROM acemq_outbox WHERE dispatched_at IS NOT NULL",
                            Integer.class) == good.size());
            List<AmqpTestClient.ReceivedMessage> audit = client.receiveAll(queue + ".audit", Duration.ofSeconds(2));
            assertThat(byMessageId(audit).values()).as("one audit message per committed reading, none from the "
                    + "rolled-back attempts or the bad ones")
                    .containsExactlyInAnyOrderElementsOf(good.stream().map(b -> "audited " + b).toList());
        }
        assertThat(jdbc.queryForList("SELECT id FROM effects", String.class)).as("one committed row per reading")
                .containsExactlyInAnyOrderElementsOf(good);
        assertThat(jdbc.queryForList("SELECT id FROM effects WHERE attempt > 1", String.class))
                .as("the batches holding a fail message were rolled back whole and ran again")
                .contains("fail-0", "fail-13", "fail-26", "fail-39");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM acemq_outbox", Integer.class))
                .as("one outbox entry per committed reading, written once").isEqualTo(good.size());
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue))).as("the bad ones, rejected")
                .isEqualTo(3);
    }

    /** Message-id to body; fails if one id came with two bodies. */
    static Map<String, String> byMessageId(List<AmqpTestClient.ReceivedMessage> messages) {
        Map<String, String> out = new HashMap<>();
        for (AmqpTestClient.ReceivedMessage m : messages) {
            String before = out.putIfAbsent(String.valueOf(m.messageId()), m.bodyAsString());
            assertThat(before == null || before.equals(m.bodyAsString())).as("message-id " + m.messageId()
                    + " carried one body").isTrue();
        }
        return out;
    }

    /** Two owners of one id after a lease takeover: whichever commits first wins, the other's work rolls back. */
    @Test
    void afterALeaseTakeoverOnlyOneOwnersTransactionCommitsEffects() throws Exception {
        PostgresSchema schema = schema("takeover");
        HikariDataSource pool = new HikariDataSource();
        pool.setJdbcUrl(schema.jdbcUrl());
        pool.setUsername(schema.user());
        pool.setPassword(schema.password());
        pool.setMaximumPoolSize(8);
        ExecutorService threads = Executors.newCachedThreadPool();
        try (pool) {
            JdbcTemplate jdbc = new JdbcTemplate(pool);
            jdbc.execute("CREATE TABLE effects (id text NOT NULL, owner text NOT NULL)");
            JdbcIdempotencyStore storeA = JdbcIdempotencyStore.builder(pool).build();
            storeA.createSchema();
            JdbcIdempotencyStore storeB = JdbcIdempotencyStore.builder(pool).build();
            DataSourceTransactionManager tm = new DataSourceTransactionManager(pool);

            for (int round = 0; round < 12; round++) {
                String id = "s:pay-" + round;
                CountDownLatch aInserted = new CountDownLatch(1);
                CountDownLatch aGo = new CountDownLatch(1);
                CyclicBarrier together = new CyclicBarrier(2);
                int order = round % 3; // 0: B commits first, 1: A commits first, 2: both at the same moment
                MessageHandler workA = e -> {
                    jdbc.update("INSERT INTO effects VALUES (?, 'A')", e.id());
                    aInserted.countDown();
                    assertThat(aGo.await(60, TimeUnit.SECONDS)).isTrue();
                    if (order == 2) {
                        together.await(60, TimeUnit.SECONDS);
                    }
                };
                MessageHandler workB = e -> {
                    jdbc.update("INSERT INTO effects VALUES (?, 'B')", e.id());
                    if (order == 1) {
                        aGo.countDown(); // A goes on and commits while B's transaction is still open
                        await().atMost(Duration.ofSeconds(60)).until(() -> storeA.isConfirmed(e.id()));
                    }
                    if (order == 2) {
                        aGo.countDown();
                        together.await(60, TimeUnit.SECONDS);
                    }
                };
                MessageHandler handlerA = new TransactionalListenerHandler(workA, storeA, pool, tm, "A");
                MessageHandler handlerB = new TransactionalListenerHandler(workB, storeB, pool, tm, "B");

                Claim a = storeA.acquire(id);
                assertThat(a.result()).isEqualTo(ClaimResult.CLAIMED);
                Future<?> ownerA = threads.submit(() -> {
                    handlerA.handle(new TestEnvelope(id, a.attempt()));
                    return null;
                });
                assertThat(aInserted.await(60, TimeUnit.SECONDS)).isTrue();
                // A's lease runs out while it works (a long GC pause, say): move the stored deadlines back
                jdbc.update("UPDATE acemq_idempotency SET lease_until = lease_until - interval '1 hour', "
                        + "expires_at = expires_at - interval '1 hour' WHERE id = ?", id);
                Claim b = storeB.acquire(id);
                assertThat(b.result()).as("B takes the message over").isEqualTo(ClaimResult.CLAIMED);
                assertThat(b.attempt()).isEqualTo(2);

                Future<?> ownerB = threads.submit(() -> {
                    handlerB.handle(new TestEnvelope(id, b.attempt()));
                    return null;
                });
                if (order == 0) {
                    ownerB.get(60, TimeUnit.SECONDS);
                    aGo.countDown();
                }
                ownerA.get(60, TimeUnit.SECONDS);
                ownerB.get(60, TimeUnit.SECONDS);

                List<String> owners = jdbc.queryForList("SELECT owner FROM effects WHERE id = ?", String.class, id);
                assertThat(owners).as("round %d (order %d): exactly one committed effect", round, order).hasSize(1);
                if (order == 0) {
                    assertThat(owners).containsExactly("B");
                } else if (order == 1) {
                    assertThat(owners).containsExactly("A");
                }
                assertThat(storeA.isConfirmed(id)).isTrue();
            }
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aFailingTransactionalListenerLeavesNothingAndItsExceptionReachesTheRuntime() throws Exception {
        PostgresSchema schema = schema("failing");
        DataSource ds = schema.dataSource();
        JdbcTemplate jdbc = new JdbcTemplate(ds);
        jdbc.execute("CREATE TABLE effects (id text NOT NULL)");
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).build();
        store.createSchema();
        IllegalStateException failure = new IllegalStateException("boom after the insert");
        MessageHandler work = e -> {
            jdbc.update("INSERT INTO effects VALUES (?)", e.id());
            throw failure;
        };
        MessageHandler handler = new TransactionalListenerHandler(work, store, ds,
                new DataSourceTransactionManager(ds), "failing");
        Claim claim = store.acquire("s:f-1");

        assertThatThrownBy(() -> handler.handle(new TestEnvelope("s:f-1", claim.attempt()))).isSameAs(failure);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM effects", Integer.class)).isZero();
        assertThat(store.isConfirmed("s:f-1")).isFalse();
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresSchema;

/**
 * What the outbox ITs share: the business table, the transactional handler that writes a row and sends, a process
 * that dies between its commit and the dispatch ({@link OutboxCrashingConsumerMain}), a downstream AceMQ consumer that
 * counts what it handles by message-id, and reads of the outbox table.
 */
final class Outboxes {

    private Outboxes() {
    }

    /** Creates the store's tables (idempotency and outbox) and the business table {@code outbox_orders}. */
    static JdbcIdempotencyStore store(PostgresSchema schema, String table) throws SQLException {
        return store(schema, table, JdbcIdempotencyStore.DEFAULT_LEASE);
    }

    /**
     * As {@link #store(PostgresSchema, String)}, with a lease of its own (also how long a row whose dispatch failed is
     * held from the sweep).
     */
    static JdbcIdempotencyStore store(PostgresSchema schema, String table, Duration lease) throws SQLException {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(schema.dataSource()).tableName(table).lease(lease)
                .build();
        store.createSchema();
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS outbox_orders (id text PRIMARY KEY)");
        }
        return store;
    }

    /**
     * @return a handler that writes a row to {@code outbox_orders} and sends {@code sends} messages to {@code address},
     *     in one transaction with the confirm (the JDBC store's transactional outbox)
     */
    static JdbcTransactionalHandler handler(JdbcIdempotencyStore store, DataSource db, String address, int sends) {
        return JdbcTransactionalHandler.of(store, db, (envelope, connection) -> {
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO outbox_orders (id) VALUES (?)")) {
                ps.setString(1, envelope.id());
                ps.executeUpdate();
            }
            for (int i = 0; i < sends; i++) {
                envelope.send(address, OutgoingMessage.builder("accepted " + envelope.messageId() + " #" + i)
                        .subject("OrderAccepted").applicationProperty("orderId", String.valueOf(envelope.messageId()))
                        .build());
            }
        });
    }

    /**
     * Sends one order to {@code queue} and has it handled by a process of its own that commits its work and its
     * outbox rows and dies before dispatching them.
     *
     * @return the incoming message's store key
     */
    static String crashAfterCommit(EmbeddedArtemis broker, PostgresSchema schema, String table, String queue,
                                   String address, int sends, String orderId) throws IOException, InterruptedException {
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(queue, AmqpTestClient.message(orderId, "order " + orderId));
        }
        Path errors = Path.of("target", "OutboxCrashingConsumerMain-" + queue + ".log").toAbsolutePath();
        String classpath = String.join(File.pathSeparator, System.getProperty("java.class.path"),
                System.getProperty("jdk.module.path", ""));
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classpath, OutboxCrashingConsumerMain.class.getName(), broker.host(),
                Integer.toString(broker.port()), schema.jdbcUrl(), orDash(schema.user()), orDash(schema.password()),
                table, queue, address, Integer.toString(sends));
        Process child = new ProcessBuilder(command).redirectError(errors.toFile()).start();
        String committed = null;
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while (committed == null && (line = out.readLine()) != null) {
                if (line.startsWith("committed ")) {
                    committed = line.substring("committed ".length());
                }
            }
        } finally {
            if (!child.waitFor(60, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
        assertThat(committed).as("the process committed a message before it died (its standard error: %s)", errors)
                .isNotNull();
        assertThat(child.exitValue()).as("halted after the commit").isEqualTo(OutboxCrashingConsumerMain.HALTED);
        return committed;
    }

    private static String orDash(String s) {
        return s == null ? "-" : s;
    }

    /** @return rows of the store's outbox table matching {@code where} (SQL) */
    static long outboxRows(PostgresSchema schema, String outboxTable, String where) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + outboxTable + " WHERE " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** @return the {@code last_error} of the outbox rows that have one */
    static List<String> outboxErrors(PostgresSchema schema, String outboxTable) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT last_error FROM " + outboxTable + " WHERE last_error IS NOT NULL")) {
            List<String> errors = new java.util.ArrayList<>();
            while (rs.next()) {
                errors.add(rs.getString(1));
            }
            return errors;
        }
    }

    /** @return the rows of {@code outbox_orders} written for messages of {@code queue} (their keys' scope) */
    static long businessRows(PostgresSchema schema, String queue) throws SQLException {
        try (Connection c = schema.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM outbox_orders WHERE id LIKE ?")) {
            ps.setString(1, queue + "|%");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /**
     * The downstream service: an AceMQ consumer of {@code address} with its defaults (keyed by message-id, an in-memory
     * store), counting its handler's runs per message-id; a copy of a message it already handled is absorbed as a
     * duplicate.
     */
    static final class Downstream implements AutoCloseable {
        final E2e.Effects handled = new E2e.Effects();
        final RecordingObserver observed = new RecordingObserver();
        private final AmqpConsumer consumer;

        Downstream(EmbeddedArtemis broker, String address) {
            consumer = E2e.consumer(broker, "downstream-" + address).store(InMemoryIdempotencyStore.ofDefaults())
                    .observer(observed)
                    .subscribe(Subscription.builder(address, e -> handled.record(String.valueOf(e.messageId())))
                            .build())
                    .start();
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(5));
        }
    }
}

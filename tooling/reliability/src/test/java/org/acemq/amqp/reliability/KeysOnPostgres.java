package org.acemq.amqp.reliability;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresSchema;

/** Shared parts of the key and scope tests on PostgreSQL: pools, stores on one table, an observer, reading rows back. */
final class KeysOnPostgres {

    private KeysOnPostgres() {
    }

    static HikariDataSource pool(PostgresSchema schema) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(schema.jdbcUrl());
        config.setUsername(schema.user());
        config.setPassword(schema.password());
        config.setMaximumPoolSize(4);
        return new HikariDataSource(config);
    }

    /** @return a store on the schema's idempotency table (the same table for every call on one schema) */
    static JdbcIdempotencyStore store(DataSource pool, PostgresSchema schema) {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool)
                .tableName(schema.qualify(JdbcIdempotencyStore.DEFAULT_TABLE_NAME)).build();
        store.createSchema();
        return store;
    }

    static AmqpConsumer.Builder consumer(EmbeddedArtemis broker, String name) {
        return AmqpConsumer.builder().name(name)
                .connection(ConnectionSettings.builder(broker.host(), broker.port())
                        .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(500)).build())
                .storeRetryDelay(Duration.ofMillis(50), Duration.ofMillis(200))
                .shutdownTimeout(Duration.ofSeconds(10));
    }

    /** Every row of the table whose id is {@code id}, column name (lower case) to value; empty if none. */
    static Map<String, Object> row(DataSource pool, PostgresSchema schema, String id) {
        String sql = "SELECT * FROM " + schema.qualify(JdbcIdempotencyStore.DEFAULT_TABLE_NAME) + " WHERE id = ?";
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, id);
            try (ResultSet rs = s.executeQuery()) {
                Map<String, Object> row = new LinkedHashMap<>();
                if (rs.next()) {
                    ResultSetMetaData meta = rs.getMetaData();
                    for (int i = 1; i <= meta.getColumnCount(); i++) {
                        row.put(meta.getColumnLabel(i).toLowerCase(java.util.Locale.ROOT), rs.getObject(i));
                    }
                }
                return row;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql + " failed: " + e, e);
        }
    }

    /** @return how many rows of the table have an id starting with {@code prefix} */
    static long rowsStartingWith(DataSource pool, PostgresSchema schema, String prefix) {
        String sql = "SELECT count(*) FROM " + schema.qualify(JdbcIdempotencyStore.DEFAULT_TABLE_NAME)
                + " WHERE starts_with(id, ?)";
        try (Connection c = pool.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, prefix);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql + " failed: " + e, e);
        }
    }

    /** Copies {@code System.err} (where slf4j-simple logs in this module's tests) while open, writing it through. */
    static final class StandardErrorTee implements AutoCloseable {
        private final PrintStream original = System.err;
        private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

        StandardErrorTee() {
            OutputStream tee = new OutputStream() {
                @Override
                public void write(int b) {
                    original.write(b);
                    synchronized (captured) {
                        captured.write(b);
                    }
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    original.write(b, off, len);
                    synchronized (captured) {
                        captured.write(b, off, len);
                    }
                }
            };
            System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
        }

        /** @return the lines written so far that contain {@code text} */
        List<String> lines(String text) {
            String all;
            synchronized (captured) {
                all = captured.toString(StandardCharsets.UTF_8);
            }
            return Arrays.stream(all.split("\n")).filter(l -> l.contains(text)).toList();
        }

        @Override
        public void close() {
            System.setErr(original);
        }
    }
}

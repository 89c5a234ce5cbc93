package org.acemq.amqp.store.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;

/**
 * One test class's PostgreSQL: a schema of its own on the shared server, a HikariCP pool on it and the store table
 * {@code <schema>.acemq_idempotency}. Close it in {@code @AfterAll}.
 */
final class PgFixture implements AutoCloseable {

    final PostgresSchema schema;
    final HikariDataSource pool;
    final String table;

    PgFixture(Class<?> testClass) {
        this.schema = PostgresProvider.shared().newSchema(testClass.getSimpleName());
        this.pool = pool(schema, 24, true);
        this.table = schema.qualify(JdbcIdempotencyStore.DEFAULT_TABLE_NAME);
        JdbcIdempotencyStore.builder(pool).tableName(table).build().createSchema();
    }

    static HikariDataSource pool(PostgresSchema schema, int size, boolean autoCommit) {
        return pool(schema, size, autoCommit, Duration.ofSeconds(10));
    }

    static HikariDataSource pool(PostgresSchema schema, int size, boolean autoCommit, Duration connectionTimeout) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(schema.jdbcUrl());
        config.setUsername(schema.user());
        config.setPassword(schema.password());
        config.setMaximumPoolSize(size);
        config.setAutoCommit(autoCommit);
        config.setConnectionTimeout(connectionTimeout.toMillis());
        config.setPoolName("test-" + schema.name());
        return new HikariDataSource(config);
    }

    /**
     * @param connections counts every connection taken
     * @param statements counts every statement prepared or created on them, or null
     * @param failConnections while it holds an exception, taking a connection throws it (an unreachable database)
     * @return a DataSource over the pool that counts what the store does with it
     */
    DataSource instrumented(AtomicInteger connections, AtomicInteger statements,
                            AtomicReference<SQLException> failConnections) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && (args == null || args.length == 0)) {
                        SQLException fail = failConnections.get();
                        if (fail != null) {
                            throw fail;
                        }
                        connections.incrementAndGet();
                        Connection c = pool.getConnection();
                        return statements == null ? c : countingStatements(c, statements);
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    private static Connection countingStatements(Connection target, AtomicInteger statements) {
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                    if (method.getName().startsWith("prepare") || method.getName().equals("createStatement")) {
                        statements.incrementAndGet();
                    }
                    try {
                        return method.invoke(target, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    JdbcIdempotencyStore.Builder builder() {
        return JdbcIdempotencyStore.builder(pool).tableName(table);
    }

    JdbcIdempotencyStore store(Duration lease, Duration retention) {
        return builder().lease(lease).retention(retention).build();
    }

    /** Empties the table: a fresh state for the next test. */
    void truncate() {
        update("TRUNCATE " + table);
    }

    /** Moves the store's time forward by shifting every stored deadline back; the database clock stays. */
    void advanceTime(Duration amount) {
        update("UPDATE " + table + " SET lease_until = lease_until - ?::interval, "
                + "expires_at = expires_at - ?::interval", amount.toMillis() + " milliseconds",
                amount.toMillis() + " milliseconds");
    }

    int update(String sql, Object... params) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    /** @return every row of the first column */
    List<Object> column(String sql, Object... params) {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            List<Object> values = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    values.add(rs.getObject(1));
                }
            }
            return values;
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    long count(String where, Object... params) {
        return ((Number) column("SELECT count(*) FROM " + table + (where.isEmpty() ? "" : " WHERE " + where),
                params).get(0)).longValue();
    }

    @Override
    public void close() {
        pool.close();
        schema.close();
    }
}

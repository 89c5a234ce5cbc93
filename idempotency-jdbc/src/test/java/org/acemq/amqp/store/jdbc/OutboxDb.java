package org.acemq.amqp.store.jdbc;

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
import javax.sql.DataSource;

/**
 * The database of an outbox test class, on any of the three products: the store's table and its outbox table (both
 * made by {@code createSchema()}), and an {@code effects} table for the handlers' own rows. Wraps the module's
 * {@link PgFixture} or {@link DialectFixture}; the owner closes that.
 */
final class OutboxDb {

    final JdbcDialect dialect;
    final HikariDataSource pool;
    private final String table;
    private final Runnable truncateStore;
    private final java.util.function.Consumer<Duration> advanceStore;
    /** The outbox table as SQL (quoted where the product needs it). */
    final String outbox;
    /** The effects table as SQL. */
    final String effects;

    private OutboxDb(JdbcDialect dialect, HikariDataSource pool, String table, String outbox, String effects,
                     Runnable truncateStore, java.util.function.Consumer<Duration> advanceStore) {
        this.dialect = dialect;
        this.pool = pool;
        this.table = table;
        this.outbox = outbox;
        this.effects = effects;
        this.truncateStore = truncateStore;
        this.advanceStore = advanceStore;
        update("CREATE TABLE " + effects + " (id VARCHAR(600) NOT NULL, tag VARCHAR(16) NOT NULL)");
    }

    static OutboxDb of(PgFixture pg) {
        return new OutboxDb(JdbcDialect.POSTGRESQL, pg.pool, pg.table,
                pg.schema.qualify(JdbcIdempotencyStore.DEFAULT_OUTBOX_TABLE_NAME), pg.schema.qualify("effects"),
                pg::truncate, pg::advanceTime);
    }

    static OutboxDb of(DialectFixture f) {
        char q = f.dialect == JdbcDialect.MARIADB ? '`' : '"';
        return new OutboxDb(f.dialect, f.pool, f.table, q + JdbcIdempotencyStore.DEFAULT_OUTBOX_TABLE_NAME + q,
                "effects", f::truncate, f::advanceTime);
    }

    JdbcIdempotencyStore.Builder builder() {
        return JdbcIdempotencyStore.builder(pool).tableName(table);
    }

    JdbcIdempotencyStore.Builder builder(DataSource dataSource) {
        return JdbcIdempotencyStore.builder(dataSource).tableName(table);
    }

    /** Empties the store's table, the outbox and the effects. */
    void truncate() {
        truncateStore.run();
        update("DELETE FROM " + outbox);
        update("DELETE FROM " + effects);
    }

    /** Moves the store's time forward (its leases and expiries), not the outbox's. */
    void advanceStoreTime(Duration amount) {
        advanceStore.accept(amount);
    }

    /** Makes outbox rows older: moves their created, dispatched and hold times back by {@code amount}. */
    void ageOutbox(Duration amount, String whereKey) {
        long ms = amount.toMillis();
        String set = switch (dialect) {
            case POSTGRESQL -> "created_at = created_at - %1$s, dispatched_at = dispatched_at - %1$s, "
                    + "retry_at = retry_at - %1$s";
            case MARIADB -> "created_at = created_at - %2$s, dispatched_at = dispatched_at - %2$s, "
                    + "retry_at = retry_at - %2$s";
            case H2 -> "created_at = DATEADD(MILLISECOND, %3$s, created_at), dispatched_at = DATEADD(MILLISECOND, "
                    + "%3$s, dispatched_at), retry_at = DATEADD(MILLISECOND, %3$s, retry_at)";
        };
        String sql = "UPDATE " + outbox + " SET " + String.format(set, "interval '" + ms + " milliseconds'",
                "INTERVAL " + ms * 1000 + " MICROSECOND", -ms)
                + (whereKey == null ? "" : " WHERE incoming_key = ?");
        if (whereKey == null) {
            update(sql);
        } else {
            update(sql, whereKey);
        }
    }

    void ageOutbox(Duration amount) {
        ageOutbox(amount, null);
    }

    long count(String tableSql, String where, Object... params) {
        return ((Number) column("SELECT COUNT(*) FROM " + tableSql + (where.isEmpty() ? "" : " WHERE " + where),
                params).get(0)).longValue();
    }

    long outboxRows(String where, Object... params) {
        return count(outbox, where, params);
    }

    long effectsOf(String id) {
        return count(effects, "id = ?", id);
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

    /**
     * @param statements counts the statements prepared or created on its connections
     * @param failCommit whether {@code commit()} throws instead of committing (the transaction stays open, so the
     *     caller's rollback undoes it)
     * @return a DataSource over the pool
     */
    DataSource instrumented(AtomicInteger statements, boolean failCommit) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && (args == null || args.length == 0)) {
                        Connection target = pool.getConnection();
                        return Proxy.newProxyInstance(Connection.class.getClassLoader(),
                                new Class<?>[] {Connection.class}, (p, m, a) -> {
                                    if (m.getName().startsWith("prepare") || m.getName().equals("createStatement")) {
                                        statements.incrementAndGet();
                                    }
                                    if (failCommit && m.getName().equals("commit")) {
                                        throw new SQLException("commit failed (test)", "08006");
                                    }
                                    try {
                                        return m.invoke(target, a);
                                    } catch (InvocationTargetException e) {
                                        throw e.getCause();
                                    }
                                });
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }
}

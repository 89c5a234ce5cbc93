package org.acemq.amqp.store.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.acemq.amqp.testsupport.MariaDbDatabase;
import org.acemq.amqp.testsupport.MariaDbProvider;

/**
 * One test class's table on MariaDB (a database of its own on the shared server, see {@link MariaDbProvider}) or on an
 * in-process H2 database, with a HikariCP pool and the store table created by the store. Close it in
 * {@code @AfterAll}.
 */
final class DialectFixture implements AutoCloseable {

    final JdbcDialect dialect;
    final HikariDataSource pool;
    final String table;
    private final MariaDbDatabase database; // null for H2

    private DialectFixture(JdbcDialect dialect, HikariDataSource pool, String table, MariaDbDatabase database) {
        this.dialect = dialect;
        this.pool = pool;
        this.table = table;
        this.database = database;
        JdbcIdempotencyStore.builder(pool).tableName(table).build().createSchema();
    }

    /** @return a fixture on a new database of the shared MariaDB server */
    static DialectFixture mariaDb(Class<?> testClass) {
        MariaDbDatabase db = MariaDbProvider.shared().newDatabase(testClass.getSimpleName());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.jdbcUrl());
        config.setUsername(db.user());
        config.setPassword(db.password());
        config.setMaximumPoolSize(24);
        config.setConnectionTimeout(10_000);
        config.setPoolName("test-" + db.name());
        return new DialectFixture(JdbcDialect.MARIADB, new HikariDataSource(config), JdbcIdempotencyStore
                .DEFAULT_TABLE_NAME, db);
    }

    /** @return a fixture on a new in-memory H2 database */
    static DialectFixture h2(Class<?> testClass) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl("jdbc:h2:mem:" + testClass.getSimpleName() + "_" + UUID.randomUUID()
                + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000");
        config.setUsername("sa");
        config.setPassword("");
        config.setMaximumPoolSize(24);
        config.setPoolName("test-h2-" + testClass.getSimpleName());
        return new DialectFixture(JdbcDialect.H2, new HikariDataSource(config), JdbcIdempotencyStore.DEFAULT_TABLE_NAME,
                null);
    }

    JdbcIdempotencyStore.Builder builder() {
        return JdbcIdempotencyStore.builder(pool).tableName(table);
    }

    private String quoted() {
        return dialect == JdbcDialect.MARIADB ? "`" + table + "`" : '"' + table + '"';
    }

    void truncate() {
        update("TRUNCATE TABLE " + quoted());
    }

    /** Moves the store's time forward by shifting every stored deadline back; the database clock stays. */
    void advanceTime(Duration amount) {
        long ms = amount.toMillis();
        if (dialect == JdbcDialect.MARIADB) {
            update("UPDATE " + quoted() + " SET lease_until = lease_until - INTERVAL " + ms * 1000
                    + " MICROSECOND, expires_at = expires_at - INTERVAL " + ms * 1000 + " MICROSECOND");
        } else {
            update("UPDATE " + quoted() + " SET lease_until = DATEADD(MILLISECOND, " + -ms + ", lease_until), "
                    + "expires_at = DATEADD(MILLISECOND, " + -ms + ", expires_at)");
        }
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

    long count(String where) {
        return ((Number) column("SELECT COUNT(*) FROM " + quoted() + (where.isEmpty() ? "" : " WHERE " + where))
                .get(0)).longValue();
    }

    String quotedTable() {
        return quoted();
    }

    @Override
    public void close() {
        pool.close();
        if (database != null) {
            database.close();
        }
    }
}

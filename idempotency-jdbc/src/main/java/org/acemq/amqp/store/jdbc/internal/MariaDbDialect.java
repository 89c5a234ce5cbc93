package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

/**
 * MariaDB 10.11 or later and MySQL 8 (InnoDB). Times are {@code DATETIME(6)} in UTC, read with
 * {@code UTC_TIMESTAMP(6)} (the statement's start, the same in every comparison of a statement), so neither the JVM's
 * nor the session's time zone matters. Ids and fingerprints are {@code VARBINARY}: compared byte for byte, with no
 * trailing-space padding and no case folding whatever the server's collations.
 *
 * <p>The claim upsert is {@code INSERT … ON DUPLICATE KEY UPDATE} with {@code VALUES()} (which MariaDB has and MySQL 8
 * still accepts; MySQL's {@code AS new} alias is not in MariaDB). MySQL and MariaDB assign {@code SET} columns from
 * left to right, each later expression seeing the earlier ones' new values: so the first assignment decides (it
 * writes this call's token only if the row is claimable, judged on the original values), and every later one copies
 * the new value only where the token is now this call's.
 *
 * <p>Refused key: SQLState class 22 or the error codes 1366 (incorrect string value), 1406 (data too long), 1264 (out
 * of range), with strict mode on (the default since MariaDB 10.2.4 and MySQL 5.7). Retried: 1213 (deadlock, SQLState
 * 40001).
 */
final class MariaDbDialect extends LockingDialect {

    private final String acquire;

    MariaDbDialect(TableName table, Duration lease, Duration retention) {
        super(table, '`', lease, retention, "/org/acemq/amqp/store/jdbc/mariadb.sql");
        String now = now();
        String won = "claim_token = VALUES(claim_token)";
        this.acquire = "INSERT INTO " + t + " (id, state, owner, attempts, lease_until, expires_at, fingerprint,"
                + " claim_token)\n"
                + "VALUES (?, 0, ?, 1, " + plus(lease) + ", " + plus(lease.plus(retention)) + ", ?, ?)\n"
                + "ON DUPLICATE KEY UPDATE\n"
                + "  claim_token = IF(" + claimable() + ", VALUES(claim_token), claim_token),\n"
                + "  attempts = IF(" + won + ", IF(expires_at <= " + now + ", 1, attempts + 1), attempts),\n"
                + "  state = IF(" + won + ", 0, state),\n"
                + "  owner = IF(" + won + ", VALUES(owner), owner),\n"
                + "  lease_until = IF(" + won + ", VALUES(lease_until), lease_until),\n"
                + "  expires_at = IF(" + won + ", VALUES(expires_at), expires_at),\n"
                + "  fingerprint = IF(" + won + ", VALUES(fingerprint), fingerprint)";
    }

    @Override
    public String name() {
        return "MariaDB";
    }

    @Override
    String now() {
        return "UTC_TIMESTAMP(6)";
    }

    @Override
    String plus(Duration d) {
        return "(UTC_TIMESTAMP(6) + INTERVAL " + d.toMillis() * 1000 + " MICROSECOND)";
    }

    @Override
    String backslashLiteral() {
        return "'\\\\'";
    }

    @Override
    String acquireUpsert() {
        return acquire;
    }

    @Override
    String confirmUpsert(String retained) {
        // attempts and fingerprint first: they read the original expires_at (assignments run left to right)
        return "INSERT INTO " + t + " (id, state, owner, attempts, lease_until, expires_at)\n"
                + "VALUES (?, 1, NULL, ?, NULL, " + retained + ")\n"
                + "ON DUPLICATE KEY UPDATE\n"
                + "  attempts = IF(expires_at <= " + now() + ", VALUES(attempts), attempts),\n"
                + "  fingerprint = IF(expires_at <= " + now() + ", NULL, fingerprint),\n"
                + "  state = 1, owner = NULL, lease_until = NULL, expires_at = VALUES(expires_at)";
    }

    @Override
    String purgeSql() {
        // through the expiry index, oldest first; each batch its own short auto-commit transaction
        return "DELETE FROM " + t + " WHERE expires_at <= " + now() + " ORDER BY expires_at LIMIT ?";
    }

    @Override
    void setOwner(PreparedStatement ps, int index, UUID owner) throws SQLException {
        ps.setString(index, owner == null ? null : owner.toString());
    }

    @Override
    OffsetDateTime timestamp(ResultSet rs, int index) throws SQLException {
        LocalDateTime value = rs.getObject(index, LocalDateTime.class);
        return value == null ? null : value.atOffset(ZoneOffset.UTC);
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
        return e.getErrorCode() == 1062;
    }

    @Override
    public void createSchema(Connection c) throws SQLException {
        // DDL commits implicitly in MySQL and MariaDB; a named lock serialises processes creating the same table
        String lock = "acemq-ddl " + table;
        try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, 60)")) {
            ps.setString(1, lock);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getInt(1) != 1) {
                    throw new SQLException("Timed out waiting for the lock '" + lock + "' of another process that "
                            + "creates the table", "HY000");
                }
            }
        }
        try (Statement s = c.createStatement()) {
            for (String statement : ddl()) {
                s.execute(statement);
            }
        } finally {
            try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
                ps.setString(1, lock);
                ps.executeQuery().close();
            }
        }
    }

    @Override
    public boolean isRefusedKey(SQLException e) {
        int code = e.getErrorCode();
        return code == 1366 || code == 1406 || code == 1264
                || (e.getSQLState() != null && e.getSQLState().startsWith("22"));
    }

    @Override
    public boolean isRetryable(SQLException e) {
        return e.getErrorCode() == 1213 || "40001".equals(e.getSQLState());
    }
}

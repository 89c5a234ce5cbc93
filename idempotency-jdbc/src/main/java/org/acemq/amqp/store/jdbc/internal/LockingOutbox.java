package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;

/**
 * The outbox on a database without PostgreSQL's {@code UPDATE … RETURNING}: MariaDB / MySQL ({@link #mariaDb}) and H2
 * ({@link #h2}). The same operations as {@link PostgresOutbox}, one statement each, except the sweep: a short
 * transaction at READ COMMITTED of a {@code SELECT … FOR UPDATE SKIP LOCKED} and an {@code UPDATE} holding what it
 * selected. Pairs of (key, position) are matched with {@code (incoming_key = ? AND position = ?) OR …}, which both
 * products resolve as primary-key ranges.
 */
abstract class LockingOutbox implements OutboxDialect {

    /** The most (key, position) pairs in one statement: two parameters each. */
    static final int MAX_PAIRS = 1_000;

    final TableName table;
    final String t;
    private final Duration hold;
    private final List<String> ddl;
    private final String pending;
    private final String status;
    private final String purge;

    LockingOutbox(TableName table, char quote, Duration hold, Duration retention, String ddlResource) {
        this.table = table;
        this.t = table.sql(quote);
        this.hold = hold;
        this.ddl = LockingDialect.ddl(ddlResource, table, t);
        this.pending = "SELECT incoming_key, position, message_id, address, message FROM " + t
                + " WHERE incoming_key = ? AND dispatched_at IS NULL ORDER BY position";
        this.status = "SELECT COUNT(*), MIN(created_at), COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0)"
                + " FROM " + t + " WHERE dispatched_at IS NULL";
        this.purge = purgeSql(plus(retention.negated()));
    }

    // ------------------------------------------------------------------------------------------ per product

    /** @return the SQL expression of the database's current time */
    abstract String now();

    /** @return the SQL expression of the database's current time plus {@code d} (whole milliseconds, may be < 0) */
    abstract String plus(Duration d);

    /** @return the insert (or upsert) of {@code rows} rows; parameters per row: key, position, id, address, message */
    abstract String insertSql(int rows);

    /** @return the purge of up to {@code ?} dispatched rows older than {@code expired} */
    abstract String purgeSql(String expired);

    /** Reads a timestamp column. */
    abstract Instant instant(ResultSet rs, int index) throws SQLException;

    // ------------------------------------------------------------------------------------------ operations

    @Override
    public List<String> ddl() {
        return ddl;
    }

    @Override
    public void insert(Connection c, List<OutboxEntry> entries) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(insertSql(entries.size()))) {
            int p = 1;
            for (OutboxEntry e : entries) {
                ps.setString(p++, e.incomingKey());
                ps.setInt(p++, e.position());
                ps.setString(p++, e.messageId());
                ps.setString(p++, e.address());
                ps.setBytes(p++, e.message());
            }
            ps.executeUpdate();
        }
    }

    @Override
    public List<OutboxEntry> pending(Connection c, String incomingKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(pending)) {
            ps.setString(1, incomingKey);
            return entries(ps);
        }
    }

    @Override
    public List<OutboxEntry> sweep(Connection c, Duration minAge, int limit) throws SQLException {
        String select = "SELECT incoming_key, position, message_id, address, message FROM " + t
                + " WHERE dispatched_at IS NULL AND created_at <= " + plus(minAge.negated())
                + " AND (retry_at IS NULL OR retry_at <= " + now() + ")"
                + " ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED";
        // READ COMMITTED: no gap locks, so the sweep's short transaction never holds up the handlers' inserts
        int isolation = c.getTransactionIsolation();
        boolean switchIsolation = isolation != Connection.TRANSACTION_READ_COMMITTED && c.getAutoCommit();
        if (switchIsolation) {
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        }
        try {
            return Transactions.run(c, tx -> {
                List<OutboxEntry> entries;
                try (PreparedStatement ps = tx.prepareStatement(select)) {
                    ps.setInt(1, limit);
                    entries = entries(ps);
                }
                if (!entries.isEmpty()) {
                    String[] keys = new String[entries.size()];
                    int[] positions = new int[entries.size()];
                    for (int i = 0; i < keys.length; i++) {
                        keys[i] = entries.get(i).incomingKey();
                        positions[i] = entries.get(i).position();
                    }
                    updatePairs(tx, "UPDATE " + t + " SET retry_at = " + plus(hold) + " WHERE ", keys, positions);
                }
                return entries;
            });
        } finally {
            if (switchIsolation) {
                c.setTransactionIsolation(isolation);
            }
        }
    }

    @Override
    public void dispatched(Connection c, String[] keys, int[] positions) throws SQLException {
        updatePairs(c, "UPDATE " + t + " SET dispatched_at = " + now() + ", retry_at = NULL WHERE dispatched_at IS NULL"
                + " AND ", keys, positions);
    }

    /** Runs {@code head} followed by the condition matching the pairs; at most {@link #MAX_PAIRS} of them. */
    private static void updatePairs(Connection c, String head, String[] keys, int[] positions) throws SQLException {
        StringBuilder sql = new StringBuilder(head.length() + keys.length * 40).append(head).append('(');
        for (int i = 0; i < keys.length; i++) {
            sql.append(i == 0 ? "" : " OR ").append("(incoming_key = ? AND position = ?)");
        }
        sql.append(')');
        try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
            int p = 1;
            for (int i = 0; i < keys.length; i++) {
                ps.setString(p++, keys[i]);
                ps.setInt(p++, positions[i]);
            }
            ps.executeUpdate();
        }
    }

    @Override
    public void failed(Connection c, String incomingKey, int position, String error) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("UPDATE " + t + " SET attempts = attempts + 1, last_error = ?,"
                + " retry_at = " + plus(hold) + " WHERE incoming_key = ? AND position = ? AND dispatched_at IS NULL")) {
            ps.setString(1, error);
            ps.setString(2, incomingKey);
            ps.setInt(3, position);
            ps.executeUpdate();
        }
    }

    @Override
    public OutboxStore.Status status(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(status); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new OutboxStore.Status(rs.getLong(1), instant(rs, 2), rs.getLong(3));
        }
    }

    @Override
    public int purgeBatch(Connection c, int batchSize) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(purge)) {
            ps.setInt(1, batchSize);
            return ps.executeUpdate();
        }
    }

    @Override
    public int maxPairsPerStatement() {
        return MAX_PAIRS;
    }

    private static List<OutboxEntry> entries(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            List<OutboxEntry> entries = new ArrayList<>();
            while (rs.next()) {
                entries.add(new OutboxEntry(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getString(4),
                        rs.getBytes(5)));
            }
            return entries;
        }
    }

    // ------------------------------------------------------------------------------------------ products

    /** @return the outbox on MariaDB 10.11 or later / MySQL 8 */
    static LockingOutbox mariaDb(TableName table, Duration hold, Duration retention) {
        return new MariaDb(table, hold, retention);
    }

    /** @return the outbox on H2 2.x */
    static LockingOutbox h2(TableName table, Duration hold, Duration retention) {
        return new H2(table, hold, retention);
    }

    /**
     * MariaDB / MySQL: times in UTC ({@code UTC_TIMESTAMP(6)}, the statement's start), the insert an
     * {@code INSERT … ON DUPLICATE KEY UPDATE}, DDL serialised by a named lock (DDL commits implicitly).
     */
    private static final class MariaDb extends LockingOutbox {

        MariaDb(TableName table, Duration hold, Duration retention) {
            super(table, '`', hold, retention, "/org/acemq/amqp/store/jdbc/mariadb-outbox.sql");
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
        String insertSql(int rows) {
            StringBuilder sql = new StringBuilder("INSERT INTO " + t
                    + " (incoming_key, position, message_id, address, message, created_at) VALUES ");
            for (int i = 0; i < rows; i++) {
                sql.append(i == 0 ? "" : ", ").append("(?, ?, ?, ?, ?, UTC_TIMESTAMP(6))");
            }
            return sql.append(" ON DUPLICATE KEY UPDATE message_id = VALUES(message_id), address = VALUES(address),"
                    + " message = VALUES(message), created_at = VALUES(created_at), dispatched_at = NULL,"
                    + " retry_at = NULL, attempts = 0, last_error = NULL").toString();
        }

        @Override
        String purgeSql(String expired) {
            return "DELETE FROM " + t + " WHERE dispatched_at <= " + expired + " ORDER BY dispatched_at LIMIT ?";
        }

        @Override
        Instant instant(ResultSet rs, int index) throws SQLException {
            LocalDateTime value = rs.getObject(index, LocalDateTime.class);
            return value == null ? null : value.toInstant(ZoneOffset.UTC);
        }

        @Override
        public void createSchema(Connection c) throws SQLException {
            String lock = "acemq-ddl " + table;
            try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, 60)")) {
                ps.setString(1, lock);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next() || rs.getInt(1) != 1) {
                        throw new SQLException("Timed out waiting for the lock '" + lock + "' of another process that "
                                + "creates the outbox table", "HY000");
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
        public boolean isUndefinedTable(SQLException e) {
            return e.getErrorCode() == 1146 || "42S02".equals(e.getSQLState());
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

    /** H2 2.x, for tests: the insert is H2's {@code MERGE INTO … KEY (…) VALUES …}. */
    private static final class H2 extends LockingOutbox {

        H2(TableName table, Duration hold, Duration retention) {
            super(table, '"', hold, retention, "/org/acemq/amqp/store/jdbc/h2-outbox.sql");
        }

        @Override
        String now() {
            return "CURRENT_TIMESTAMP";
        }

        @Override
        String plus(Duration d) {
            return "DATEADD(MILLISECOND, " + d.toMillis() + ", CURRENT_TIMESTAMP)";
        }

        @Override
        String insertSql(int rows) {
            StringBuilder sql = new StringBuilder("MERGE INTO " + t + " (incoming_key, position, message_id, address,"
                    + " message, created_at, dispatched_at, retry_at, attempts, last_error) KEY (incoming_key, position)"
                    + " VALUES ");
            for (int i = 0; i < rows; i++) {
                sql.append(i == 0 ? "" : ", ").append("(?, ?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, NULL, 0, NULL)");
            }
            return sql.toString();
        }

        @Override
        String purgeSql(String expired) {
            return "DELETE FROM " + t + " WHERE dispatched_at <= " + expired + " FETCH FIRST ? ROWS ONLY";
        }

        @Override
        Instant instant(ResultSet rs, int index) throws SQLException {
            OffsetDateTime value = rs.getObject(index, OffsetDateTime.class);
            return value == null ? null : value.toInstant();
        }

        @Override
        public void createSchema(Connection c) throws SQLException {
            try (Statement s = c.createStatement()) {
                for (String statement : ddl()) {
                    s.execute(statement);
                }
            }
        }

        @Override
        public boolean isUndefinedTable(SQLException e) {
            int code = e.getErrorCode();
            return code == 42102 || code == 42103 || code == 42104 || "42S02".equals(e.getSQLState());
        }

        @Override
        public boolean isRefusedKey(SQLException e) {
            return e.getSQLState() != null && e.getSQLState().startsWith("22");
        }

        @Override
        public boolean isRetryable(SQLException e) {
            return "40001".equals(e.getSQLState());
        }
    }
}

package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;

/**
 * The outbox on PostgreSQL 12 or later: every operation one statement. The sweep is one {@code UPDATE … FROM (SELECT …
 * FOR UPDATE SKIP LOCKED) … RETURNING}; marks are one {@code UPDATE … FROM unnest(keys, positions)}. The pending rows
 * have a partial index of their own, so the sweep and the status read only the backlog.
 */
final class PostgresOutbox implements OutboxDialect {

    private final TableName table;
    private final String t;
    private final List<String> ddl;
    private final String insertHead;
    private final String insertConflict;
    private final String pending;
    private final String sweep;
    private final String dispatched;
    private final String failed;
    private final String status;
    private final String purge;

    /**
     * @param table the validated outbox table name
     * @param hold how long a swept or failed row is held from other sweeps
     * @param retention how long a dispatched row is kept
     */
    PostgresOutbox(TableName table, Duration hold, Duration retention) {
        this.table = table;
        this.t = table.sql();
        this.ddl = LockingDialect.ddl("/org/acemq/amqp/store/jdbc/postgresql-outbox.sql", table, t);
        String holdUntil = "now() + " + PostgresSql.interval(hold);
        String expired = "now() - " + PostgresSql.interval(retention);
        String columns = "incoming_key, position, message_id, address, message";

        // In the caller's transaction, after the confirm. Parameters per row: key, position, message id, address,
        // message. statement_timestamp(), not now(): now() is the start of the caller's transaction, and the sweep's
        // minimum age is counted from the write. A row of the same key and position can only be left from a run of
        // the handler before its incoming message was forgotten: it is replaced, pending again.
        this.insertHead = "INSERT INTO " + t + " AS o (incoming_key, position, message_id, address, message, created_at)"
                + "\nVALUES ";
        this.insertConflict = "\nON CONFLICT (incoming_key, position) DO UPDATE\n"
                + "   SET message_id = excluded.message_id, address = excluded.address, message = excluded.message,\n"
                + "       created_at = excluded.created_at, dispatched_at = NULL, retry_at = NULL, attempts = 0,\n"
                + "       last_error = NULL";
        // Parameters: 1 key. Through the primary key.
        this.pending = "SELECT " + columns + " FROM " + t
                + " WHERE incoming_key = ? AND dispatched_at IS NULL ORDER BY position";
        // Parameters: 1 minimum age in ms, 2 limit. The inner SELECT walks the pending index oldest first and locks
        // the rows it takes, skipping rows another sweep (or a mark) has locked, and re-checks its WHERE on the latest
        // row version; the UPDATE then holds them, so that the next sweeps of any process skip them until the hold ends.
        this.sweep = "UPDATE " + t + " AS o SET retry_at = " + holdUntil + "\n"
                + "  FROM (SELECT incoming_key, position FROM " + t + "\n"
                + "         WHERE dispatched_at IS NULL AND created_at <= now() - (interval '1 millisecond' * ?)\n"
                + "           AND (retry_at IS NULL OR retry_at <= now())\n"
                + "         ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED) AS s\n"
                + " WHERE o.incoming_key = s.incoming_key AND o.position = s.position\n"
                + "RETURNING o.incoming_key, o.position, o.message_id, o.address, o.message, o.created_at";
        // Parameters: 1 keys, 2 positions (sorted pairs). Primary-key lookups; a row already marked is left alone.
        this.dispatched = "UPDATE " + t + " AS o SET dispatched_at = now(), retry_at = NULL\n"
                + "  FROM unnest(?::text[], ?::int4[]) AS m(incoming_key, position)\n"
                + " WHERE o.incoming_key = m.incoming_key AND o.position = m.position AND o.dispatched_at IS NULL";
        // Parameters: 1 error, 2 key, 3 position.
        this.failed = "UPDATE " + t + " SET attempts = attempts + 1, last_error = ?, retry_at = " + holdUntil + "\n"
                + " WHERE incoming_key = ? AND position = ? AND dispatched_at IS NULL";
        // Through the pending index only.
        this.status = "SELECT count(*), min(created_at), count(*) FILTER (WHERE attempts > 0) FROM " + t
                + " WHERE dispatched_at IS NULL";
        // Parameters: 1 batch size. As the store's own purge: up to N rows found through the dispatched index, deleted
        // by ctid; re-checking the condition keeps a row that was written again in between.
        this.purge = "DELETE FROM " + t + " WHERE ctid = ANY (ARRAY(\n"
                + "  SELECT ctid FROM " + t + " WHERE dispatched_at <= " + expired + " LIMIT ?))\n"
                + " AND dispatched_at <= " + expired;
    }

    @Override
    public List<String> ddl() {
        return ddl;
    }

    @Override
    public void createSchema(Connection c) throws SQLException {
        Transactions.run(c, tx -> {
            try (Statement s = tx.createStatement()) {
                s.execute("SELECT pg_advisory_xact_lock(hashtext('acemq-outbox-ddl " + table + "'))");
                for (String statement : ddl) {
                    s.execute(statement);
                }
            }
            return null;
        });
    }

    @Override
    public void insert(Connection c, List<OutboxEntry> entries) throws SQLException {
        StringBuilder sql = new StringBuilder(insertHead.length() + insertConflict.length() + entries.size() * 40);
        sql.append(insertHead);
        for (int i = 0; i < entries.size(); i++) {
            sql.append(i == 0 ? "" : ", ").append("(?, ?, ?, ?, ?, statement_timestamp())");
        }
        sql.append(insertConflict);
        try (PreparedStatement ps = c.prepareStatement(sql.toString())) {
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
            try (ResultSet rs = ps.executeQuery()) {
                List<OutboxEntry> entries = new ArrayList<>();
                while (rs.next()) {
                    entries.add(entry(rs));
                }
                return entries;
            }
        }
    }

    @Override
    public List<OutboxEntry> sweep(Connection c, Duration minAge, int limit) throws SQLException {
        record Swept(OutboxEntry entry, OffsetDateTime createdAt) {
        }
        try (PreparedStatement ps = c.prepareStatement(sweep)) {
            ps.setLong(1, minAge.toMillis());
            ps.setInt(2, limit);
            List<Swept> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Swept(entry(rs), rs.getObject(6, OffsetDateTime.class)));
                }
            }
            // RETURNING has no order: oldest first, as the sweep took them
            rows.sort(Comparator.comparing(Swept::createdAt)
                    .thenComparing(s -> s.entry().incomingKey()).thenComparingInt(s -> s.entry().position()));
            List<OutboxEntry> entries = new ArrayList<>(rows.size());
            for (Swept s : rows) {
                entries.add(s.entry());
            }
            return entries;
        }
    }

    private static OutboxEntry entry(ResultSet rs) throws SQLException {
        return new OutboxEntry(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getString(4), rs.getBytes(5));
    }

    @Override
    public void dispatched(Connection c, String[] keys, int[] positions) throws SQLException {
        Integer[] boxed = new Integer[positions.length];
        for (int i = 0; i < positions.length; i++) {
            boxed[i] = positions[i];
        }
        try (PreparedStatement ps = c.prepareStatement(dispatched)) {
            ps.setArray(1, c.createArrayOf("text", keys));
            ps.setArray(2, c.createArrayOf("int4", boxed));
            ps.executeUpdate();
        }
    }

    @Override
    public void failed(Connection c, String incomingKey, int position, String error) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(failed)) {
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
            OffsetDateTime oldest = rs.getObject(2, OffsetDateTime.class);
            return new OutboxStore.Status(rs.getLong(1), oldest == null ? null : oldest.toInstant(), rs.getLong(3));
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
        return 10_000; // two arrays, two parameters: only the statement's size bounds it
    }

    @Override
    public boolean isUndefinedTable(SQLException e) {
        return "42P01".equals(e.getSQLState());
    }

    @Override
    public boolean isRefusedKey(SQLException e) {
        return e.getSQLState() != null && e.getSQLState().startsWith("22");
    }

    @Override
    public boolean isRetryable(SQLException e) {
        return "40P01".equals(e.getSQLState()) || "40001".equals(e.getSQLState());
    }
}

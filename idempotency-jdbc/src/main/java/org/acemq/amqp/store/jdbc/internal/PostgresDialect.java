package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.acemq.amqp.api.Claim;

/**
 * PostgreSQL 12 or later: the SQL of {@link PostgresSql} (single ids) and {@link PostgresBatchSql} (arrays), every
 * operation one statement in auto-commit. Refused key: SQLState class 22.
 */
public final class PostgresDialect implements StoreDialect {

    private final TableName table;
    private final PostgresSql sql;
    private final PostgresBatchSql batch;

    /**
     * @param table the validated table name
     * @param lease the lease, at least 1 ms
     * @param retention the retention, at least 1 ms
     */
    public PostgresDialect(TableName table, Duration lease, Duration retention) {
        this.table = table;
        this.sql = new PostgresSql(table, lease, retention);
        this.batch = new PostgresBatchSql(table, lease, retention);
    }

    @Override
    public String name() {
        return "PostgreSQL";
    }

    @Override
    public List<String> ddl() {
        return sql.ddl;
    }

    @Override
    public void createSchema(Connection c) throws SQLException {
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.execute("SELECT pg_advisory_xact_lock(hashtext('acemq-idempotency-ddl " + table + "'))");
            for (String ddl : sql.ddl) {
                s.execute(ddl);
            }
            c.commit();
        } catch (SQLException | RuntimeException e) {
            Transactions.rollbackQuietly(c);
            throw e;
        } finally {
            c.setAutoCommit(autoCommit);
        }
    }

    @Override
    public Claim acquire(Connection c, String messageId, UUID owner, String fingerprint) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.acquire)) {
            ps.setString(1, messageId);
            ps.setObject(2, owner);
            ps.setString(3, fingerprint);
            ps.setString(4, messageId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new Claim(messageId, Claims.result(IN_PROGRESS), 0);
                }
                return new Claim(messageId, Claims.result(rs.getInt(1)), rs.getInt(2), rs.getString(3));
            }
        }
    }

    @Override
    public void confirm(Connection c, String messageId, int attempts) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.confirm)) {
            ps.setString(1, messageId);
            ps.setInt(2, attempts);
            ps.executeUpdate();
        }
    }

    @Override
    public boolean confirmClaim(Connection c, Claim claim, UUID owner) throws SQLException {
        String messageId = claim.messageId();
        if (claim.claimed()) {
            // the common case first: the lease is still held (or this claim confirmed the id in a transaction)
            try (PreparedStatement ps = c.prepareStatement(sql.confirmHeld)) {
                ps.setString(1, messageId);
                ps.setObject(2, owner);
                ps.setInt(3, claim.attempt());
                ps.setString(4, messageId);
                ps.setObject(5, owner);
                ps.setInt(6, claim.attempt());
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next() && (rs.getBoolean(1) || rs.getBoolean(2))) {
                        return true;
                    }
                }
            }
        }
        try (PreparedStatement ps = c.prepareStatement(sql.confirmClaim)) {
            ps.setObject(1, owner);
            ps.setInt(2, claim.attempt());
            ps.setObject(3, owner);
            ps.setInt(4, claim.attempt());
            ps.setString(5, messageId);
            ps.setString(6, messageId);
            ps.setInt(7, claim.attempt());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1) && claim.claimed();
            }
        }
    }

    @Override
    public boolean[] confirmInTransaction(Connection c, Claim claim, UUID owner) throws SQLException {
        String messageId = claim.messageId();
        try (PreparedStatement ps = c.prepareStatement(sql.confirmInTransaction)) {
            ps.setObject(1, owner);
            ps.setInt(2, claim.attempt());
            ps.setString(3, messageId);
            ps.setString(4, messageId);
            ps.setObject(5, owner);
            ps.setInt(6, claim.attempt());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("confirmInTransaction returned no row");
                }
                return new boolean[] {rs.getBoolean(1), rs.getBoolean(2)};
            }
        }
    }

    @Override
    public Set<String> lockInTransaction(Connection c, String[] ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(batch.lockInTransaction)) {
            ps.setArray(1, c.createArrayOf("text", ids));
            Set<String> confirmed = new HashSet<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getBoolean(2)) {
                        confirmed.add(rs.getString(1));
                    }
                }
            }
            return confirmed;
        }
    }

    @Override
    public boolean lockOneInTransaction(Connection c, String id) throws SQLException {
        return lockInTransaction(c, new String[] {id}).contains(id);
    }

    @Override
    public Map<String, boolean[]> confirmAllInTransaction(Connection c, List<Claim> claims, UUID owner)
            throws SQLException {
        String[] ids = new String[claims.size()];
        Integer[] attempts = new Integer[claims.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = claims.get(i).messageId();
            attempts[i] = claims.get(i).attempt();
        }
        try (PreparedStatement ps = c.prepareStatement(batch.confirmInTransaction)) {
            ps.setArray(1, c.createArrayOf("text", ids));
            ps.setArray(2, c.createArrayOf("int4", attempts));
            ps.setObject(3, owner);
            ps.setObject(4, owner);
            Map<String, boolean[]> out = new HashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), new boolean[] {rs.getBoolean(2), rs.getBoolean(3)});
                }
            }
            if (out.size() != ids.length) {
                throw new SQLException("confirmAllInTransaction answered for " + out.size() + " of " + ids.length
                        + " ids");
            }
            return out;
        }
    }

    @Override
    public boolean renew(Connection c, Claim claim, UUID owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.renew)) {
            ps.setString(1, claim.messageId());
            ps.setObject(2, owner);
            ps.setInt(3, claim.attempt());
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public boolean releaseClaim(Connection c, Claim claim, UUID owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.releaseClaim)) {
            ps.setString(1, claim.messageId());
            ps.setObject(2, owner);
            ps.setInt(3, claim.attempt());
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public void releaseOwned(Connection c, String messageId, UUID owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.releaseOwned)) {
            ps.setString(1, messageId);
            ps.setObject(2, owner);
            ps.executeUpdate();
        }
    }

    @Override
    public boolean isConfirmed(Connection c, String messageId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.isConfirmed)) {
            ps.setString(1, messageId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    @Override
    public int attempts(Connection c, String messageId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.attempts)) {
            ps.setString(1, messageId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        }
    }

    @Override
    public boolean resetAttempts(Connection c, String messageId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.resetAttempts)) {
            ps.setString(1, messageId);
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public StoredRow describe(Connection c, String messageId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.describe)) {
            ps.setString(1, messageId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? row(rs) : null;
            }
        }
    }

    private static StoredRow row(ResultSet rs) throws SQLException {
        return new StoredRow(rs.getInt(1), rs.getInt(2), rs.getBoolean(3), rs.getBoolean(4),
                rs.getObject(5, OffsetDateTime.class), rs.getObject(6, OffsetDateTime.class), rs.getString(7));
    }

    @Override
    public List<ScopeRow> scopes(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.scopes); ResultSet rs = ps.executeQuery()) {
            List<ScopeRow> counts = new ArrayList<>();
            while (rs.next()) {
                counts.add(new ScopeRow(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                        rs.getLong(6)));
            }
            return counts;
        }
    }

    @Override
    public Map<String, StoredRow> keysLike(Connection c, String pattern, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.keysOfScope)) {
            ps.setString(1, pattern);
            ps.setInt(2, limit);
            Map<String, StoredRow> rows = new LinkedHashMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.put(rs.getString(8), row(rs));
                }
            }
            return rows;
        }
    }

    @Override
    public int purgeBatch(Connection c, int batchSize) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.purgeBatch)) {
            ps.setInt(1, batchSize);
            return ps.executeUpdate();
        }
    }

    @Override
    public Map<String, Claim> acquireAll(Connection c, String[] ids, String[] prints, UUID owner)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(batch.acquire)) {
            ps.setArray(1, c.createArrayOf("text", ids));
            ps.setArray(2, c.createArrayOf("text", prints));
            ps.setObject(3, owner);
            Map<String, Claim> rows = new HashMap<>(ids.length * 2);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String id = rs.getString(1);
                    rows.put(id, new Claim(id, Claims.result(rs.getInt(2)), rs.getInt(3), rs.getString(4)));
                }
            }
            return rows;
        }
    }

    @Override
    public void confirmAll(Connection c, String[] ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(batch.confirmIds)) {
            ps.setArray(1, c.createArrayOf("text", ids));
            ps.executeUpdate();
        }
    }

    @Override
    public Set<String> confirmClaims(Connection c, String[] ids, Integer[] attempts, UUID owner)
            throws SQLException {
        return claimArrays(c, batch.confirmClaims, ids, attempts, owner, 4, false);
    }

    @Override
    public Set<String> releaseClaims(Connection c, String[] ids, Integer[] attempts, UUID owner)
            throws SQLException {
        return claimArrays(c, batch.releaseClaims, ids, attempts, owner, 3, true);
    }

    private static Set<String> claimArrays(Connection c, String statement, String[] ids, Integer[] attempts,
                                           UUID owner, int ownerParameters, boolean leaseKeys) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(statement)) {
            ps.setArray(1, c.createArrayOf("text", ids));
            ps.setArray(2, c.createArrayOf("int4", attempts));
            for (int i = 3; i <= ownerParameters; i++) {
                ps.setObject(i, owner);
            }
            Set<String> rows = new HashSet<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(leaseKeys ? rs.getInt(2) + ":" + rs.getString(1) : rs.getString(1));
                }
            }
            return rows;
        }
    }

    /** SQLState class 22 (data exception): a value PostgreSQL cannot hold, such as an id too long for the column. */
    @Override
    public boolean isRefusedKey(SQLException e) {
        return e.getSQLState() != null && e.getSQLState().startsWith("22");
    }

    @Override
    public boolean isRetryable(SQLException e) {
        return "40P01".equals(e.getSQLState()) || "40001".equals(e.getSQLState());
    }
}

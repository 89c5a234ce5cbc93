package org.acemq.amqp.store.jdbc.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

/**
 * The store on a database without PostgreSQL's {@code INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING} in one
 * statement: MariaDB / MySQL ({@link MariaDbDialect}) and H2 ({@link H2Dialect}). The table is PostgreSQL's plus one
 * column, {@code claim_token}: 16 random bytes that each claim statement writes when (and only when) it wins the row.
 *
 * <ul>
 *   <li><b>Claim:</b> one upsert decides, atomically under the row lock, and writes this call's token if the row was
 *       claimable; a primary-key lookup then reads the row back: the token tells whether this call won. Two
 *       auto-commit statements; the read-back cannot mistake another claim for this one (tokens are per call), and
 *       another claim can replace this one in between only after this lease ran out. (MariaDB overrides this with
 *       one statement that returns its rows.)</li>
 *   <li><b>Fenced confirm:</b> first one auto-commit {@code UPDATE … WHERE owner = ? AND attempts = ? AND lease is
 *       live} (the common case, one statement). Otherwise a short transaction locks the row ({@code SELECT … FOR
 *       UPDATE}), decides, and records completion.</li>
 *   <li><b>renew, release, isConfirmed, attempts, resetAttempts:</b> one statement each, as on PostgreSQL.</li>
 *   <li><b>Batches and group commit:</b> here, one transaction per batch, its ids in sorted order (row locks in id
 *       order), each id's statements as above: one commit per batch, several round trips. H2 runs these; MariaDB
 *       overrides them with multi-row statements ({@link MariaDbBatchSql}).</li>
 *   <li><b>Deadlocks and lock wait timeouts</b> ({@link #isRetryable}) of a single-id operation that owns its
 *       transaction are run again ({@link #retrying}), as the batches are by {@link BatchStatements}.</li>
 *   <li><b>Purge:</b> {@code DELETE … WHERE expires_at <= now … LIMIT n} through the expiry index.</li>
 * </ul>
 * The clock is the database's, read by {@link #now}.
 */
abstract class LockingDialect implements StoreDialect {

    /** A row anyone may claim: released, forgotten, or a lapsed lease. Column names unqualified. */
    private final String claimable;
    protected final TableName table;
    protected final String t;
    protected final Duration lease;
    protected final Duration retention;
    private final List<String> ddl;

    private final String readClaim;
    private final String confirmUpsert;
    private final String confirmHeld;
    private final String lockForConfirm;
    private final String confirmLocked;
    private final String lockForTransaction;
    private final String confirmInTransaction;
    private final String insertInTransaction;
    private final String renew;
    private final String releaseOwned;
    private final String releaseClaim;
    private final String isConfirmed;
    private final String attempts;
    private final String resetAttempts;
    private final String describe;
    private final String scopes;
    private final String keysLike;

    LockingDialect(TableName table, char quote, Duration lease, Duration retention, String ddlResource) {
        this.table = table;
        this.t = table.sql(quote);
        this.lease = lease;
        this.retention = retention;
        this.ddl = ddl(ddlResource, table, t);
        String now = now();
        this.claimable = "(state = 2 OR expires_at <= " + now + " OR (state = 0 AND lease_until <= " + now + "))";
        String retained = plus(retention);
        String row = "state, attempts, lease_until > " + now + ", expires_at > " + now + ", lease_until, expires_at,"
                + " fingerprint";

        // (code, attempts, fingerprint) as PostgresSql.acquire reports them; CLAIMED when the row holds this call's token.
        // Parameters: 1 token, 2 token, 3 id. The fingerprint of a lost claim is that of a confirmed or live row.
        this.readClaim = "SELECT CASE WHEN claim_token = ? THEN " + CLAIMED + " WHEN state = 1 AND expires_at > "
                + now + " THEN " + ALREADY_CONFIRMED + " ELSE " + IN_PROGRESS + " END,\n"
                + "       CASE WHEN expires_at > " + now + " THEN attempts ELSE 0 END,\n"
                + "       CASE WHEN claim_token = ? OR (expires_at > " + now + " AND (state = 1 OR (state = 0 AND"
                + " lease_until > " + now + "))) THEN fingerprint END\n"
                + "  FROM " + t + " WHERE id = ?";
        this.confirmUpsert = confirmUpsert(retained);
        // Parameters: 1 id, 2 owner, 3 attempt. The common case of a fenced confirm.
        this.confirmHeld = "UPDATE " + t + " SET state = 1, owner = NULL, lease_until = NULL, expires_at = "
                + retained + " WHERE id = ? AND state = 0 AND owner = ? AND attempts = ? AND lease_until > " + now;
        // Parameters: 1 owner, 2 attempt, 3 owner, 4 attempt, 5 id. (held, marker) of the locked row.
        this.lockForConfirm = "SELECT CASE WHEN (state = 0 AND owner = ? AND attempts = ? AND lease_until > " + now
                + ") OR (state = 1 AND owner = ? AND attempts = ? AND expires_at > " + now + ") THEN 1 ELSE 0 END,\n"
                + "       CASE WHEN state = 1 AND owner IS NOT NULL AND expires_at > " + now + " THEN 1 ELSE 0 END\n"
                + "  FROM " + t + " WHERE id = ? FOR UPDATE";
        // Parameters: 1 attempts for a forgotten row, 2 id. Runs on a locked row. The attempts and fingerprint
        // assignments come first: MySQL and MariaDB evaluate SET from left to right, and these read expires_at.
        this.confirmLocked = "UPDATE " + t + " SET attempts = CASE WHEN expires_at <= " + now
                + " THEN ? ELSE attempts END,\n"
                + "       fingerprint = CASE WHEN expires_at <= " + now + " THEN NULL ELSE fingerprint END,\n"
                + "       state = 1, owner = NULL, lease_until = NULL, expires_at = " + retained + "\n WHERE id = ?";
        // In the caller's transaction. Parameters: 1 owner, 2 attempt, 3 id. (held, confirmed) of the locked row.
        this.lockForTransaction = "SELECT CASE WHEN state = 0 AND owner = ? AND attempts = ? AND lease_until > " + now
                + " THEN 1 ELSE 0 END,\n       CASE WHEN state = 1 AND expires_at > " + now + " THEN 1 ELSE 0 END\n"
                + "  FROM " + t + " WHERE id = ? FOR UPDATE";
        // Parameters: 1 attempts for a forgotten row, 2 owner, 3 id. Keeps owner and attempt as the marker of a
        // transactional confirm, as on PostgreSQL.
        this.confirmInTransaction = "UPDATE " + t + " SET attempts = CASE WHEN expires_at <= " + now
                + " THEN ? ELSE attempts END,\n"
                + "       fingerprint = CASE WHEN expires_at <= " + now + " THEN NULL ELSE fingerprint END,\n"
                + "       state = 1, owner = ?, lease_until = NULL, expires_at = " + retained + "\n WHERE id = ?";
        // Parameters: 1 id, 2 owner, 3 attempt.
        this.insertInTransaction = "INSERT INTO " + t + " (id, state, owner, attempts, lease_until, expires_at)"
                + " VALUES (?, 1, ?, ?, NULL, " + retained + ")";
        this.renew = "UPDATE " + t + " SET lease_until = " + plus(lease) + ", expires_at = "
                + plus(lease.plus(retention)) + "\n WHERE id = ? AND state = 0 AND owner = ? AND attempts = ?"
                + " AND lease_until > " + now;
        this.releaseOwned = "UPDATE " + t + " SET state = 2, owner = NULL, lease_until = NULL, expires_at = "
                + retained + "\n WHERE id = ? AND state = 0 AND owner = ? AND expires_at > " + now;
        this.releaseClaim = releaseOwned + " AND attempts = ?";
        this.isConfirmed = "SELECT 1 FROM " + t + " WHERE id = ? AND state = 1 AND expires_at > " + now;
        this.attempts = "SELECT attempts FROM " + t + " WHERE id = ? AND expires_at > " + now;
        this.resetAttempts = "DELETE FROM " + t + " WHERE id = ? AND expires_at > " + now
                + " AND (state = 2 OR (state = 0 AND lease_until <= " + now + "))";
        this.describe = "SELECT " + row + " FROM " + t + " WHERE id = ?";
        String scope = "CASE WHEN LOCATE('|', id) > 1 THEN LEFT(id, LOCATE('|', id) - 1) END";
        this.scopes = "SELECT " + scope + " AS scope, COUNT(*),\n"
                + "       SUM(CASE WHEN expires_at > " + now + " AND state = 1 THEN 1 ELSE 0 END),\n"
                + "       SUM(CASE WHEN expires_at > " + now + " AND state = 0 AND lease_until > " + now
                + " THEN 1 ELSE 0 END),\n"
                + "       SUM(CASE WHEN expires_at > " + now + " AND (state = 2 OR (state = 0 AND lease_until <= "
                + now + ")) THEN 1 ELSE 0 END),\n"
                + "       SUM(CASE WHEN expires_at <= " + now + " THEN 1 ELSE 0 END)\n"
                + "  FROM " + t + " GROUP BY " + scope + " ORDER BY scope";
        this.keysLike = "SELECT " + row + ", id FROM " + t + " WHERE id LIKE ? ESCAPE " + backslashLiteral()
                + " ORDER BY id LIMIT ?";
    }

    // ------------------------------------------------------------------------------------------ per product

    /** @return the SQL expression of the database's current time, the same type as the timestamp columns */
    abstract String now();

    /** @return the SQL expression of the database's current time plus {@code d} (whole milliseconds) */
    abstract String plus(Duration d);

    /** @return a string literal holding one backslash */
    abstract String backslashLiteral();

    /**
     * The claim's upsert. Parameters: 1 id, 2 owner, 3 fingerprint, 4 token. Inserts a claimed row (attempt 1) or,
     * if the existing row is {@link #claimable()}, makes it this claim (attempt + 1, or 1 if forgotten), writing the
     * token; leaves any other row as it is.
     */
    abstract String acquireUpsert();

    /**
     * Parameters: 1 id, 2 attempts (recorded for a new or forgotten row). Records completion whatever the row's
     * state, keeping the claim's attempt and fingerprint unless the row was forgotten.
     */
    abstract String confirmUpsert(String retained);

    /** Binds an owner id. */
    abstract void setOwner(PreparedStatement ps, int index, UUID owner) throws SQLException;

    /** Reads a timestamp column. */
    abstract OffsetDateTime timestamp(ResultSet rs, int index) throws SQLException;

    /** @return whether {@code e} is a duplicate-key violation (a concurrent insert of the same id) */
    abstract boolean isDuplicateKey(SQLException e);

    /** @return the SQL for {@link #purgeBatch}: parameter 1, the batch size */
    abstract String purgeSql();

    /** @return the claimable condition over unqualified columns */
    final String claimable() {
        return claimable;
    }

    @Override
    public List<String> ddl() {
        return ddl;
    }

    // ------------------------------------------------------------------------------------------ operations

    @Override
    public Claim acquire(Connection c, String id, UUID owner, String fingerprint) throws SQLException {
        byte[] token = token();
        for (int attempt = 0;; attempt++) {
            try (PreparedStatement ps = c.prepareStatement(acquireUpsert())) {
                ps.setString(1, id);
                setOwner(ps, 2, owner);
                ps.setString(3, fingerprint);
                ps.setBytes(4, token);
                ps.executeUpdate();
                break;
            } catch (SQLException e) {
                // H2's MERGE does not turn a concurrent insert of the same id into an update: it waits for that
                // transaction and then fails, changing nothing (H2 rolls back the failed statement only); run again.
                // A deadlock victim or a lock wait timeout of its own transaction changed nothing either.
                if (!(isDuplicateKey(e) ? attempt < 3 : ownRetryable(c, e) && attempt < BatchStatements.RETRIES)) {
                    throw e;
                }
            }
        }
        try (PreparedStatement ps = c.prepareStatement(readClaim)) {
            ps.setBytes(1, token);
            ps.setBytes(2, token);
            ps.setString(3, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new Claim(id, ClaimResult.IN_PROGRESS, 0);
                }
                return new Claim(id, Claims.result(rs.getInt(1)), rs.getInt(2), rs.getString(3));
            }
        }
    }

    /** @return 16 random bytes, the token of one claim statement (or of one confirming batch) */
    static byte[] token() {
        UUID u = UUID.randomUUID();
        return ByteBuffer.allocate(16).putLong(u.getMostSignificantBits()).putLong(u.getLeastSignificantBits())
                .array();
    }

    @Override
    public void confirm(Connection c, String id, int attempts) throws SQLException {
        for (int attempt = 0;; attempt++) {
            try (PreparedStatement ps = c.prepareStatement(confirmUpsert)) {
                ps.setString(1, id);
                ps.setInt(2, attempts);
                ps.executeUpdate();
                return;
            } catch (SQLException e) {
                if (!(isDuplicateKey(e) ? attempt < 3 : ownRetryable(c, e) && attempt < BatchStatements.RETRIES)) {
                    throw e;
                }
            }
        }
    }

    @Override
    public boolean confirmClaim(Connection c, Claim claim, UUID owner) throws SQLException {
        if (claim.claimed() && fenced(c, confirmHeld, claim.messageId(), owner, claim.attempt()) == 1) {
            return true;
        }
        boolean held = retrying(c, own -> Transactions.run(own, tx -> {
            try (PreparedStatement ps = tx.prepareStatement(lockForConfirm)) {
                setOwner(ps, 1, owner);
                ps.setInt(2, claim.attempt());
                setOwner(ps, 3, owner);
                ps.setInt(4, claim.attempt());
                ps.setString(5, claim.messageId());
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        // no row (purged, or never claimed): the upsert inserts it, or meets a concurrent insert
                        confirm(tx, claim.messageId(), claim.attempt());
                        return false;
                    }
                    boolean wasHeld = rs.getInt(1) == 1;
                    if (rs.getInt(2) == 1) {
                        return wasHeld; // confirmed in a transaction: left alone, as on PostgreSQL
                    }
                    try (PreparedStatement up = tx.prepareStatement(confirmLocked)) {
                        up.setInt(1, claim.attempt());
                        up.setString(2, claim.messageId());
                        up.executeUpdate();
                    }
                    return wasHeld;
                }
            }
        }));
        return held && claim.claimed();
    }

    @Override
    public boolean[] confirmInTransaction(Connection c, Claim claim, UUID owner) throws SQLException {
        for (int attempt = 0;; attempt++) {
            try (PreparedStatement ps = c.prepareStatement(lockForTransaction)) {
                setOwner(ps, 1, owner);
                ps.setInt(2, claim.attempt());
                ps.setString(3, claim.messageId());
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        boolean held = rs.getInt(1) == 1;
                        if (rs.getInt(2) == 1) {
                            return new boolean[] {false, false};
                        }
                        try (PreparedStatement up = c.prepareStatement(confirmInTransaction)) {
                            up.setInt(1, claim.attempt());
                            setOwner(up, 2, owner);
                            up.setString(3, claim.messageId());
                            up.executeUpdate();
                        }
                        return new boolean[] {true, held};
                    }
                }
            }
            try (PreparedStatement ins = c.prepareStatement(insertInTransaction)) {
                ins.setString(1, claim.messageId());
                setOwner(ins, 2, owner);
                ins.setInt(3, claim.attempt());
                ins.executeUpdate();
                return new boolean[] {true, false};
            } catch (SQLException e) {
                // a concurrent transaction inserted the id first: the failed statement changed nothing, the
                // caller's transaction goes on; lock the row it inserted and decide again
                if (!isDuplicateKey(e) || attempt >= 3) {
                    throw e;
                }
            }
        }
    }

    @Override
    public boolean renew(Connection c, Claim claim, UUID owner) throws SQLException {
        return fenced(c, renew, claim.messageId(), owner, claim.attempt()) == 1;
    }

    @Override
    public boolean releaseClaim(Connection c, Claim claim, UUID owner) throws SQLException {
        return fenced(c, releaseClaim, claim.messageId(), owner, claim.attempt()) == 1;
    }

    @Override
    public void releaseOwned(Connection c, String id, UUID owner) throws SQLException {
        fenced(c, releaseOwned, id, owner, null);
    }

    /** One single-row UPDATE, fenced by owner (and attempt); parameters 1 id, 2 owner, 3 attempt. */
    private int fenced(Connection c, String sql, String id, UUID owner, Integer attempt) throws SQLException {
        return retrying(c, own -> {
            try (PreparedStatement ps = own.prepareStatement(sql)) {
                ps.setString(1, id);
                setOwner(ps, 2, owner);
                if (attempt != null) {
                    ps.setInt(3, attempt);
                }
                return ps.executeUpdate();
            }
        });
    }

    /**
     * Runs a single-id operation that is one statement or one transaction of its own. When it owns its transaction
     * ({@code c} in auto-commit) and the database aborted it as a deadlock victim or after a lock wait timeout
     * ({@link #isRetryable}), it had no effect (the statement or the whole transaction was rolled back) and runs
     * again, up to {@value BatchStatements#RETRIES} times, as a batch does. In a caller's transaction it runs once:
     * what the failure left of that transaction is the caller's to handle.
     */
    final <T> T retrying(Connection c, Transactions.Work<T> work) throws SQLException {
        for (int attempt = 0;; attempt++) {
            try {
                return work.apply(c);
            } catch (SQLException e) {
                if (attempt >= BatchStatements.RETRIES || !ownRetryable(c, e)) {
                    throw e;
                }
            }
        }
    }

    /** @return whether {@code e}, thrown on {@code c}, aborted a statement of the store's own transaction only */
    private boolean ownRetryable(Connection c, SQLException e) throws SQLException {
        return isRetryable(e) && !c.isClosed() && c.getAutoCommit();
    }

    @Override
    public boolean isConfirmed(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(isConfirmed)) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    @Override
    public int attempts(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(attempts)) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getInt(1) : 0;
            }
        }
    }

    @Override
    public boolean resetAttempts(Connection c, String id) throws SQLException {
        return retrying(c, own -> {
            try (PreparedStatement ps = own.prepareStatement(resetAttempts)) {
                ps.setString(1, id);
                return ps.executeUpdate() == 1;
            }
        });
    }

    @Override
    public StoredRow describe(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(describe)) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? row(rs) : null;
            }
        }
    }

    private StoredRow row(ResultSet rs) throws SQLException {
        return new StoredRow(rs.getInt(1), rs.getInt(2), rs.getBoolean(3), rs.getBoolean(4), timestamp(rs, 5),
                timestamp(rs, 6), rs.getString(7));
    }

    @Override
    public List<ScopeRow> scopes(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(scopes); ResultSet rs = ps.executeQuery()) {
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
        try (PreparedStatement ps = c.prepareStatement(keysLike)) {
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
        try (PreparedStatement ps = c.prepareStatement(purgeSql())) {
            ps.setInt(1, batchSize);
            return ps.executeUpdate();
        }
    }

    // ------------------------------------------------------------------------------------------ batches

    @Override
    public Map<String, Claim> acquireAll(Connection c, String[] ids, String[] prints, UUID owner)
            throws SQLException {
        return Transactions.run(c, tx -> {
            Map<String, Claim> rows = new HashMap<>(ids.length * 2);
            for (int i = 0; i < ids.length; i++) {
                rows.put(ids[i], acquire(tx, ids[i], owner, prints[i]));
            }
            return rows;
        });
    }

    @Override
    public void confirmAll(Connection c, String[] ids) throws SQLException {
        Transactions.run(c, tx -> {
            for (String id : ids) {
                confirm(tx, id, 0);
            }
            return null;
        });
    }

    @Override
    public Set<String> confirmClaims(Connection c, String[] ids, Integer[] attempts, UUID owner)
            throws SQLException {
        return Transactions.run(c, tx -> {
            Set<String> held = new HashSet<>();
            for (int i = 0; i < ids.length; i++) {
                if (confirmClaim(tx, new Claim(ids[i], ClaimResult.CLAIMED, attempts[i]), owner)) {
                    held.add(ids[i]);
                }
            }
            return held;
        });
    }

    @Override
    public Set<String> releaseClaims(Connection c, String[] ids, Integer[] attempts, UUID owner)
            throws SQLException {
        return Transactions.run(c, tx -> {
            Set<String> released = new HashSet<>();
            for (int i = 0; i < ids.length; i++) {
                if (fenced(tx, releaseClaim, ids[i], owner, attempts[i]) == 1) {
                    released.add(attempts[i] + ":" + ids[i]);
                }
            }
            return released;
        });
    }

    // ------------------------------------------------------------------------------------------ DDL

    static List<String> ddl(String resource, TableName table, String quoted) {
        String text;
        try (InputStream in = LockingDialect.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("DDL resource " + resource + " is missing from the jar");
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read " + resource, e);
        }
        text = text.replace("${table}", quoted).replace("${name}", table.name());
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : text.split("\n")) {
            if (line.strip().equals(";")) {
                statements.add(current.toString().strip());
                current.setLength(0);
            } else if (!line.strip().startsWith("--")) {
                current.append(line).append('\n');
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().strip());
        }
        return List.copyOf(statements);
    }
}

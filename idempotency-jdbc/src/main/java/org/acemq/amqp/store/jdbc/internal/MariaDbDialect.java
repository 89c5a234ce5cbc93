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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

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
 * <p><b>MariaDB or MySQL.</b> Both report the product {@code MySQL} through some drivers, so the server's version
 * string decides, once per store: on MariaDB 10.5 or later ({@code …-MariaDB…}) the claim upsert carries a
 * {@code RETURNING} clause and answers in the same statement, under the row locks it took; on MySQL (no
 * {@code RETURNING}) the claim reads its rows back, as a second statement (single ids: in auto-commit, as
 * {@link LockingDialect} describes; batches: in the claim's transaction, before its commit). Everything else is the
 * same SQL on both.
 *
 * <p><b>Batches</b> ({@link MariaDbBatchSql}) are multi-row statements, one commit per batch. On MariaDB a claim batch
 * and a fenced confirm batch are one auto-commit statement each (an upsert with {@code RETURNING}). On MySQL a claim
 * batch is the upsert and its read-back in one transaction, and a confirm batch one {@code UPDATE} of the claims that
 * still hold their lease, in a transaction that commits at once when all of them did (the common case). On both, a
 * batch of plain confirms is one upsert, and a release batch locks the rows, decides and updates them, in one
 * transaction.
 *
 * <p>Refused key: SQLState class 22 or the error codes 1366 (incorrect string value), 1406 (data too long), 1264 (out
 * of range), with strict mode on (the default since MariaDB 10.2.4 and MySQL 5.7). Retried: 1213 (deadlock, SQLState
 * 40001) and 1205 (lock wait timeout); InnoDB rolls the statement back (and, for a deadlock, the transaction), so it
 * had no effect, and the store rolls back the rest of its own transaction before it runs it again.
 */
final class MariaDbDialect extends LockingDialect {

    /** MariaDB's error code for a deadlock victim; the transaction was rolled back. */
    static final int DEADLOCK = 1213;
    /** MariaDB's error code for a lock wait past {@code innodb_lock_wait_timeout}; the statement was rolled back. */
    static final int LOCK_WAIT_TIMEOUT = 1205;
    /** The major and minor version at the start of a server version string. */
    private static final Pattern VERSION = Pattern.compile("(\\d+)\\.(\\d+)");

    private final String acquire;
    private final MariaDbBatchSql batch;
    /** null: read from the server's version; else forced (tests run MySQL's statements on MariaDB). */
    private final Boolean forcedReturning;
    private volatile Boolean returning;

    MariaDbDialect(TableName table, Duration lease, Duration retention) {
        this(table, lease, retention, null);
    }

    /**
     * @param returning null to read from the server whether the claim can use {@code RETURNING}; false to run
     *     MySQL's statements whatever the server (tests); true to use it
     */
    MariaDbDialect(TableName table, Duration lease, Duration retention, Boolean returning) {
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
        this.batch = new MariaDbBatchSql(t, now, plus(lease), plus(lease.plus(retention)), plus(retention),
                claimable());
        this.forcedReturning = returning;
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
        return e.getErrorCode() == DEADLOCK || e.getErrorCode() == LOCK_WAIT_TIMEOUT
                || "40001".equals(e.getSQLState());
    }

    // ------------------------------------------------------------------------------------------ MariaDB or MySQL

    /** @return whether the claim upsert may carry {@code RETURNING} on the server behind {@code c} */
    boolean returning(Connection c) throws SQLException {
        Boolean r = returning;
        if (r == null) {
            r = forcedReturning != null ? forcedReturning
                    : supportsReturning(c.getMetaData().getDatabaseProductVersion());
            returning = r;
        }
        return r;
    }

    /**
     * @param version the server's version string, e.g. {@code 10.11.19-MariaDB-0+deb12u1}, or
     *     {@code 5.5.5-10.11.19-MariaDB…} through MySQL's driver, or {@code 8.0.36} from MySQL
     * @return whether it is MariaDB 10.5 or later, whose {@code INSERT … ON DUPLICATE KEY UPDATE} takes
     *     {@code RETURNING}
     */
    static boolean supportsReturning(String version) {
        if (version == null || !version.toLowerCase(Locale.ROOT).contains("mariadb")) {
            return false;
        }
        String v = version.startsWith("5.5.5-") ? version.substring("5.5.5-".length()) : version;
        Matcher m = VERSION.matcher(v);
        if (!m.lookingAt()) {
            return false;
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        return major > 10 || (major == 10 && minor >= 5);
    }

    // ------------------------------------------------------------------------------------------ single ids

    @Override
    public Claim acquire(Connection c, String id, UUID owner, String fingerprint) throws SQLException {
        if (!returning(c)) {
            return super.acquire(c, id, owner, fingerprint);
        }
        Claim claim = retrying(c, tx -> claimReturning(tx, new String[] {id}, new String[] {fingerprint}, 0, 1,
                owner, token())).get(id);
        return claim != null ? claim : new Claim(id, ClaimResult.IN_PROGRESS, 0);
    }

    // ------------------------------------------------------------------------------------------ batches

    @Override
    public Map<String, Claim> acquireAll(Connection c, String[] ids, String[] prints, UUID owner)
            throws SQLException {
        byte[] token = token();
        if (returning(c)) {
            if (ids.length <= MariaDbBatchSql.MAX_ROWS) {
                return claimReturning(c, ids, prints, 0, ids.length, owner, token); // one auto-commit statement
            }
            return Transactions.run(c, tx -> {
                Map<String, Claim> rows = new HashMap<>(ids.length * 2);
                for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                    rows.putAll(claimReturning(tx, ids, prints, from, chunkEnd(ids, from), owner, token));
                }
                return rows;
            });
        }
        // MySQL: the upserts, then the read-back in the same transaction; every row is locked by then
        return Transactions.run(c, tx -> {
            for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                int to = chunkEnd(ids, from);
                try (PreparedStatement ps = tx.prepareStatement(batch.claim(to - from, false))) {
                    bindClaims(ps, ids, prints, from, to, owner, token);
                    ps.executeUpdate();
                }
            }
            Map<String, Claim> rows = new HashMap<>(ids.length * 2);
            for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                int to = chunkEnd(ids, from);
                try (PreparedStatement ps = tx.prepareStatement(batch.readClaims(to - from))) {
                    ps.setBytes(1, token);
                    ps.setBytes(2, token);
                    for (int i = from; i < to; i++) {
                        ps.setString(3 + i - from, ids[i]);
                    }
                    readClaims(ps, rows);
                }
            }
            return rows;
        });
    }

    /** One claim statement with RETURNING over ids[from, to), on {@code c} as it is (auto-commit or not). */
    private Map<String, Claim> claimReturning(Connection c, String[] ids, String[] prints, int from, int to,
                                              UUID owner, byte[] token) throws SQLException {
        int n = to - from;
        try (PreparedStatement ps = c.prepareStatement(batch.claim(n, true))) {
            bindClaims(ps, ids, prints, from, to, owner, token);
            ps.setBytes(4 * n + 1, token);
            ps.setBytes(4 * n + 2, token);
            Map<String, Claim> rows = new HashMap<>(n * 2);
            readClaims(ps, rows);
            return rows;
        }
    }

    private void bindClaims(PreparedStatement ps, String[] ids, String[] prints, int from, int to, UUID owner,
                            byte[] token) throws SQLException {
        int p = 1;
        for (int i = from; i < to; i++) {
            ps.setString(p++, ids[i]);
            setOwner(ps, p++, owner);
            ps.setString(p++, prints[i]);
            ps.setBytes(p++, token);
        }
    }

    private static void readClaims(PreparedStatement ps, Map<String, Claim> into) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                String id = rs.getString(1);
                into.put(id, new Claim(id, Claims.result(rs.getInt(2)), rs.getInt(3), rs.getString(4)));
            }
        }
    }

    @Override
    public void confirmAll(Connection c, String[] ids) throws SQLException {
        if (ids.length <= MariaDbBatchSql.MAX_ROWS) {
            confirmUpsert(c, ids, null, 0, ids.length); // one auto-commit statement
            return;
        }
        Transactions.run(c, tx -> {
            for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                confirmUpsert(tx, ids, null, from, chunkEnd(ids, from));
            }
            return null;
        });
    }

    /** Records completion of ids[from, to); attempts (null: 0) are recorded for new or forgotten rows. */
    private void confirmUpsert(Connection c, String[] ids, int[] attempts, int from, int to) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(batch.confirmUpsert(to - from))) {
            int p = 1;
            for (int i = from; i < to; i++) {
                ps.setString(p++, ids[i]);
                ps.setInt(p++, attempts == null ? 0 : attempts[i]);
            }
            ps.executeUpdate();
        }
    }

    /**
     * On MariaDB one auto-commit statement ({@link MariaDbBatchSql#confirmClaims}) decides and records every claim and
     * returns which held. On MySQL (no {@code RETURNING}) see {@link #confirmThenDecide}.
     */
    @Override
    public Set<String> confirmClaims(Connection c, String[] ids, Integer[] attempts, UUID owner)
            throws SQLException {
        byte[] token = token();
        if (returning(c)) {
            if (ids.length <= MariaDbBatchSql.MAX_ROWS) {
                return confirmReturning(c, ids, attempts, 0, ids.length, owner, token); // one auto-commit statement
            }
            return Transactions.run(c, tx -> {
                Set<String> held = new HashSet<>(ids.length * 2);
                for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                    held.addAll(confirmReturning(tx, ids, attempts, from, chunkEnd(ids, from), owner, token));
                }
                return held;
            });
        }
        return confirmThenDecide(c, ids, attempts, owner, token);
    }

    /** MariaDB: the fenced confirm of ids[from, to) in one statement; @return the ids whose claim held. */
    private Set<String> confirmReturning(Connection c, String[] ids, Integer[] attempts, int from, int to,
                                        UUID owner, byte[] token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(batch.confirmClaims(to - from))) {
            int p = 1;
            for (int i = from; i < to; i++) {
                ps.setString(p++, ids[i]);
                ps.setInt(p++, attempts[i]);
            }
            setOwner(ps, p++, owner);
            setOwner(ps, p++, owner);
            ps.setBytes(p++, token);
            ps.setBytes(p, token);
            Set<String> held = new HashSet<>((to - from) * 2);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getBoolean(2)) {
                        held.add(rs.getString(1));
                    }
                }
            }
            return held;
        }
    }

    /**
     * MySQL: one transaction. The common case, every claim still holding its lease, is one {@code UPDATE} (per
     * {@link MariaDbBatchSql#MAX_ROWS} ids) and the commit. Otherwise the same transaction goes on: it locks every
     * row of the batch ({@code SELECT … FOR UPDATE}), tells the rows its own update just confirmed (they carry this
     * call's token, which the update wrote into {@code claim_token}) from the others, decides those as the single-id
     * fenced confirm does (held: the live lease of this claim, or confirmed by this very claim in a caller's
     * transaction; a row so confirmed is left alone), and records completion of the rest with one upsert.
     */
    private Set<String> confirmThenDecide(Connection c, String[] ids, Integer[] attempts, UUID owner, byte[] token)
            throws SQLException {
        return Transactions.run(c, tx -> {
            int updated = 0;
            for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                int to = chunkEnd(ids, from);
                int n = to - from;
                try (PreparedStatement ps = tx.prepareStatement(batch.confirmHeld(n))) {
                    ps.setBytes(1, token);
                    for (int i = from; i < to; i++) {
                        ps.setString(2 + i - from, ids[i]);
                    }
                    setOwner(ps, n + 2, owner);
                    int p = n + 3;
                    for (int i = from; i < to; i++) {
                        ps.setString(p++, ids[i]);
                        ps.setInt(p++, attempts[i]);
                    }
                    updated += ps.executeUpdate();
                }
            }
            Set<String> held = new HashSet<>(ids.length * 2);
            if (updated == ids.length) {
                held.addAll(Arrays.asList(ids));
                return held;
            }
            Map<String, Integer> attemptOf = new HashMap<>(ids.length * 2);
            for (int i = 0; i < ids.length; i++) {
                attemptOf.put(ids[i], attempts[i]);
            }
            Set<String> settled = new HashSet<>(ids.length * 2); // held here, or left alone
            for (int from = 0; from < ids.length; from += MariaDbBatchSql.MAX_ROWS) {
                int to = chunkEnd(ids, from);
                try (PreparedStatement ps = tx.prepareStatement(batch.lockForConfirm(to - from))) {
                    setOwner(ps, 1, owner);
                    ps.setBytes(2, token);
                    for (int i = from; i < to; i++) {
                        ps.setString(3 + i - from, ids[i]);
                    }
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            String id = rs.getString(1);
                            if (rs.getBoolean(8)) { // confirmed by this call's update above
                                held.add(id);
                                settled.add(id);
                                continue;
                            }
                            int state = rs.getInt(2);
                            boolean mine = rs.getBoolean(3) && rs.getInt(4) == attemptOf.get(id);
                            boolean remembered = rs.getBoolean(6);
                            if (mine && ((state == 0 && rs.getBoolean(5)) || (state == 1 && remembered))) {
                                held.add(id);
                            }
                            if (state == 1 && remembered && rs.getBoolean(7)) {
                                settled.add(id); // confirmed in a caller's transaction: left alone, as on PostgreSQL
                            }
                        }
                    }
                }
            }
            List<Integer> rest = new ArrayList<>(ids.length - settled.size());
            for (int i = 0; i < ids.length; i++) {
                if (!settled.contains(ids[i])) {
                    rest.add(i);
                }
            }
            String[] restIds = new String[rest.size()];
            int[] restAttempts = new int[rest.size()];
            for (int k = 0; k < restIds.length; k++) {
                restIds[k] = ids[rest.get(k)];
                restAttempts[k] = attempts[rest.get(k)];
            }
            for (int from = 0; from < restIds.length; from += MariaDbBatchSql.MAX_ROWS) {
                confirmUpsert(tx, restIds, restAttempts, from, chunkEnd(restIds, from));
            }
            return held;
        });
    }

    /**
     * One transaction: locks the rows of the batch that hold a live claim of this owner, releases those whose
     * attempt one of the claims names, and commits.
     */
    @Override
    public Set<String> releaseClaims(Connection c, String[] ids, Integer[] attempts, UUID owner)
            throws SQLException {
        String[] distinct = Arrays.stream(ids).distinct().toArray(String[]::new); // ids arrive sorted
        return Transactions.run(c, tx -> {
            Map<String, Integer> live = new HashMap<>(distinct.length * 2);
            for (int from = 0; from < distinct.length; from += MariaDbBatchSql.MAX_ROWS) {
                int to = chunkEnd(distinct, from);
                try (PreparedStatement ps = tx.prepareStatement(batch.lockForRelease(to - from))) {
                    for (int i = from; i < to; i++) {
                        ps.setString(1 + i - from, distinct[i]);
                    }
                    setOwner(ps, 1 + to - from, owner);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            live.put(rs.getString(1), rs.getInt(2));
                        }
                    }
                }
            }
            Set<String> released = new HashSet<>();
            List<String> rows = new ArrayList<>();
            for (int i = 0; i < ids.length; i++) {
                Integer current = live.get(ids[i]);
                if (current != null && current.intValue() == attempts[i]) {
                    released.add(attempts[i] + ":" + ids[i]);
                    rows.add(ids[i]);
                }
            }
            String[] chosen = rows.toArray(String[]::new);
            for (int from = 0; from < chosen.length; from += MariaDbBatchSql.MAX_ROWS) {
                int to = chunkEnd(chosen, from);
                try (PreparedStatement ps = tx.prepareStatement(batch.release(to - from))) {
                    for (int i = from; i < to; i++) {
                        ps.setString(1 + i - from, chosen[i]);
                    }
                    ps.executeUpdate();
                }
            }
            return released;
        });
    }

    private static int chunkEnd(String[] ids, int from) {
        return Math.min(ids.length, from + MariaDbBatchSql.MAX_ROWS);
    }
}

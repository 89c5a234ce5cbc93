package org.acemq.amqp.store.jdbc.internal;

import java.time.Duration;

/**
 * The group-commit ({@link GroupCommit}) variants of the statements in {@link PostgresSql}: one statement, hence one
 * autocommit transaction and one commit, for many ids, passed as arrays and expanded with {@code unnest}.
 *
 * <p>Callers pass <b>distinct</b> ids ({@code ON CONFLICT DO UPDATE} cannot touch a row twice in one statement),
 * <b>sorted</b>. Every statement takes its row locks <b>in {@code id} order</b> ({@code INSERT … SELECT … ORDER BY id},
 * or one {@code FOR UPDATE} probe per id in the order of the sorted array), so concurrent batches over overlapping ids
 * queue behind each other instead of deadlocking. The one exception is {@link #confirmClaims}: it locks the existing
 * rows in order first and inserts the missing ones afterwards (a confirm whose row was purged, or never claimed), so
 * in the rare case of a concurrent batch inserting one of those missing ids a deadlock is possible; PostgreSQL then
 * aborts one statement as a whole, and the group commit retries it (see {@code JdbcGroupCommit}).
 *
 * <p><b>Plans.</b> Each existing row is looked up by a {@code LATERAL} subquery on {@code id = r.id} behind an
 * {@code OFFSET 0} fence, which PostgreSQL can only run as a primary-key probe per id; the rows to release are then
 * updated by {@code ctid} (a TID scan). No statement here has a join the planner could turn into a sequential scan of
 * the table. That matters because the driver prepares these statements on the server and PostgreSQL keeps a generic
 * plan: one made while the table was small (a new table that autovacuum has not analysed yet) would otherwise keep
 * scanning the whole, growing table on every batch.
 *
 * <p>The semantics of each row are exactly those of the single-id statement; see {@link PostgresSql}.
 */
public final class PostgresBatchSql {

    /**
     * Parameters: 1 text[] distinct ids, 2 text[] their fingerprints (same length, null elements for none), 3 owner.
     * Returns (id, code, attempts, fingerprint) for every id whose row exists after the statement's snapshot or that
     * was claimed; an id without a row is IN_PROGRESS with attempt 0, as for {@link PostgresSql#acquire}, whose
     * fingerprint rules apply per id.
     */
    public final String acquire;
    /** Parameters: 1 text[] distinct ids. An upsert per id, like {@link PostgresSql#confirm} with attempts 0. */
    public final String confirmIds;
    /**
     * Parameters: 1 text[] distinct ids, 2 int[] attempts (same length), 3 owner, 4 owner. Records completion of
     * every id and returns the ids whose lease was still held, or that this claim had already confirmed in a
     * transaction (one column), exactly as {@link PostgresSql#confirmClaim} does per id.
     */
    public final String confirmClaims;
    /**
     * Parameters: 1 text[] ids, 2 int[] attempts (same length; distinct (id, attempt) pairs, an id may repeat with
     * different attempts), 3 owner. Returns (id, attempts) of every released row.
     */
    public final String releaseClaims;
    /**
     * In the caller's transaction. Parameters: 1 text[] distinct ids. Locks each existing row in the order of the
     * (sorted) array and returns (id, confirmed) for each.
     */
    public final String lockInTransaction;
    /**
     * In the caller's transaction. Parameters: 1 text[] distinct ids, 2 int[] attempts (same length), 3 owner, 4 owner.
     * Returns (id, won, held) for every id, exactly as {@link PostgresSql#confirmInTransaction} answers per id.
     */
    public final String confirmInTransaction;

    /**
     * @param table the validated table name
     * @param lease the lease duration, at least 1 ms
     * @param retention the retention, at least 1 ms
     */
    public PostgresBatchSql(TableName table, Duration lease, Duration retention) {
        String t = table.sql();
        String leaseIv = PostgresSql.interval(lease);
        String retentionIv = PostgresSql.interval(retention);
        String leaseUntil = "now() + " + leaseIv;
        String claimExpires = "now() + " + leaseIv + " + " + retentionIv;
        String retained = "now() + " + retentionIv;
        String columns = "INSERT INTO " + t + " AS t (id, state, owner, attempts, lease_until, expires_at)\n";
        // identical to the ON CONFLICT clause of PostgresSql.confirm / confirmClaim
        String confirmConflict = "ON CONFLICT (id) DO UPDATE\n"
                + "   SET state = 1, owner = NULL, lease_until = NULL, expires_at = excluded.expires_at,\n"
                + "       attempts = CASE WHEN t.expires_at <= now() THEN excluded.attempts ELSE t.attempts END,\n"
                + "       fingerprint = CASE WHEN t.expires_at <= now() THEN NULL ELSE t.fingerprint END";

        // Every lookup of an existing row is a LATERAL subquery on "t.id = r.id" fenced by OFFSET 0, so that it can
        // only run as one primary-key probe per requested id (a Nested Loop over req). Without the fence PostgreSQL
        // may plan a hash join over a sequential scan of the whole table; a server-side prepared statement keeps its
        // generic plan, and a plan made while the table was small (a new table, before autovacuum analyses it) then
        // scans an ever larger table on every batch.
        this.acquire = "WITH req AS (SELECT r.id, r.fp FROM unnest(?::text[], ?::text[]) AS r(id, fp)),\n"
                + "claimed AS (\n"
                + "  INSERT INTO " + t + " AS t (id, state, owner, attempts, lease_until, expires_at, fingerprint)\n"
                + "  SELECT r.id, 0, ?::uuid, 1, " + leaseUntil + ", " + claimExpires + ", r.fp FROM req r ORDER BY r.id\n"
                + "  ON CONFLICT (id) DO UPDATE\n"
                + "     SET state = 0, owner = excluded.owner,\n"
                + "         attempts = CASE WHEN t.expires_at <= now() THEN 1 ELSE t.attempts + 1 END,\n"
                + "         lease_until = excluded.lease_until, expires_at = excluded.expires_at,\n"
                + "         fingerprint = excluded.fingerprint\n"
                + "   WHERE " + PostgresSql.CLAIMABLE + "\n"
                + "  RETURNING t.id, t.attempts, t.fingerprint)\n"
                + "SELECT c.id, " + PostgresSql.CLAIMED + ", c.attempts, c.fingerprint FROM claimed c\n"
                + "UNION ALL\n"
                + "SELECT x.id, CASE WHEN x.state = 1 AND x.expires_at > now() THEN " + PostgresSql.ALREADY_CONFIRMED
                + " ELSE " + PostgresSql.IN_PROGRESS + " END,\n"
                + "       CASE WHEN x.expires_at > now() THEN x.attempts ELSE 0 END,\n"
                + "       " + PostgresSql.HELD_FINGERPRINT + "\n"
                + "  FROM (SELECT r.id FROM req r WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.id = r.id)) u\n"
                + "  CROSS JOIN LATERAL (SELECT x.id, x.state, x.attempts, x.lease_until, x.expires_at, x.fingerprint"
                + " FROM " + t + " x WHERE x.id = u.id OFFSET 0) x";

        this.confirmIds = columns
                + "SELECT r.id, 1, NULL::uuid, 0, NULL::timestamptz, " + retained
                + " FROM unnest(?::text[]) AS r(id) ORDER BY r.id\n"
                + confirmConflict;

        // As PostgresSql.confirmClaim, per id: "prior" locks each existing row (in id order: req follows the sorted
        // array) and decides whether the claim still held it, or had already confirmed it in a transaction (such a
        // row keeps owner and attempt and is left alone); the upsert then records completion.
        this.confirmClaims = "WITH req AS (SELECT r.id, r.attempt FROM unnest(?::text[], ?::int[]) AS r(id, attempt)),\n"
                + "prior AS (\n"
                + "  SELECT p.id, p.held FROM req r CROSS JOIN LATERAL (\n"
                + "    SELECT t.id, (t.state = 0 AND t.owner = ?::uuid AND t.attempts = r.attempt AND t.lease_until > now())\n"
                + "              OR (t.state = 1 AND t.owner = ?::uuid AND t.attempts = r.attempt AND t.expires_at > now())"
                + " AS held\n"
                + "      FROM " + t + " t WHERE t.id = r.id OFFSET 0 FOR UPDATE) p),\n"
                + "confirmed AS (\n"
                + "  " + columns
                + "  SELECT r.id, 1, NULL::uuid, r.attempt, NULL::timestamptz, " + retained + "\n"
                + "    FROM req r, (SELECT count(*) FROM prior) AS prior_first ORDER BY r.id\n"
                + "  " + confirmConflict + "\n"
                + "   WHERE NOT (t.state = 1 AND t.owner IS NOT NULL AND t.expires_at > now()))\n"
                + "SELECT p.id FROM prior p WHERE p.held";

        // statement_timestamp(), not now(), as PostgresSql.confirmInTransaction: now() is the start of the caller's
        // transaction, which may have begun long before (the batch's own work runs in it)
        String ts = "statement_timestamp()";
        this.lockInTransaction = "SELECT p.id, p.confirmed FROM unnest(?::text[]) AS r(id) CROSS JOIN LATERAL (\n"
                + "  SELECT t.id, (t.state = 1 AND t.expires_at > " + ts + ") AS confirmed\n"
                + "    FROM " + t + " t WHERE t.id = r.id OFFSET 0 FOR UPDATE) p";

        // As PostgresSql.confirmInTransaction, per id: "prior" locks each existing row (in the order of the sorted
        // array) and tells whether the claim still held its live lease; the upsert records completion unless the
        // row is confirmed already (then that id is not won), keeping owner and attempt as the marker of a
        // transactional confirm.
        this.confirmInTransaction = "WITH req AS (SELECT r.id, r.attempt FROM unnest(?::text[], ?::int[]) AS r(id, attempt)),\n"
                + "prior AS (\n"
                + "  SELECT p.id, p.held FROM req r CROSS JOIN LATERAL (\n"
                + "    SELECT t.id, (t.state = 0 AND t.owner = ?::uuid AND t.attempts = r.attempt"
                + " AND t.lease_until > " + ts + ") AS held\n"
                + "      FROM " + t + " t WHERE t.id = r.id OFFSET 0 FOR UPDATE) p),\n"
                + "confirmed AS (\n"
                + "  " + columns
                + "  SELECT r.id, 1, ?::uuid, r.attempt, NULL::timestamptz, " + ts + " + " + retentionIv + "\n"
                + "    FROM req r, (SELECT count(*) FROM prior) AS prior_first ORDER BY r.id\n"
                + "  ON CONFLICT (id) DO UPDATE\n"
                + "     SET state = 1, owner = excluded.owner, lease_until = NULL, expires_at = excluded.expires_at,\n"
                + "         attempts = CASE WHEN t.expires_at <= " + ts + " THEN excluded.attempts ELSE t.attempts END,\n"
                + "         fingerprint = CASE WHEN t.expires_at <= " + ts + " THEN NULL ELSE t.fingerprint END\n"
                + "   WHERE NOT (t.state = 1 AND t.expires_at > " + ts + ")\n"
                + "  RETURNING t.id)\n"
                + "SELECT r.id, EXISTS (SELECT 1 FROM confirmed c WHERE c.id = r.id),\n"
                + "       coalesce((SELECT p.held FROM prior p WHERE p.id = r.id), false)\n"
                + "  FROM req r";

        this.releaseClaims = "WITH req AS (SELECT r.id, r.attempt FROM unnest(?::text[], ?::int[]) AS r(id, attempt)),\n"
                + "target AS (\n"
                + "  SELECT g.tid FROM req r CROSS JOIN LATERAL (\n"
                + "    SELECT t.ctid AS tid FROM " + t + " t\n"
                + "     WHERE t.id = r.id AND t.state = 0 AND t.owner = ?::uuid AND t.expires_at > now()"
                + " AND t.attempts = r.attempt\n"
                + "     OFFSET 0 FOR UPDATE) g)\n"
                + "UPDATE " + t + " AS t SET state = 2, owner = NULL, lease_until = NULL, expires_at = " + retained
                + "\n WHERE t.ctid = ANY (ARRAY(SELECT g.tid FROM target g))\n"
                + "RETURNING t.id, t.attempts";
    }
}

package org.acemq.amqp.store.jdbc.internal;

import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * The multi-row statements of {@link MariaDbDialect}: the batch forms of its single-id statements, one statement for
 * up to {@link #MAX_ROWS} ids, so that a batch of the runtime's claims or confirms is one or two statements and one
 * commit, as on PostgreSQL ({@link PostgresBatchSql}), instead of a few statements per id.
 *
 * <p>MariaDB and MySQL have no arrays: a statement for n ids has n rows of {@code VALUES} or n placeholders in an
 * {@code IN} list, so its text depends on n. The texts are built once per row count and kept (up to
 * {@link #CACHED_ROWS} rows; longer lists, which only a caller's own {@code acquireAll} makes, are built per call).
 *
 * <p>Every statement takes the ids <b>distinct and sorted</b>. {@code INSERT … VALUES} writes its rows in the order
 * of the list and an {@code IN} list on the primary key is read in key order, so every statement takes its row locks
 * in id order, and concurrent batches over overlapping ids mostly queue behind each other. InnoDB may still choose a
 * statement as a deadlock victim (its gap locks do not follow that order), and then rolls it back whole: the store
 * runs it again ({@link StoreDialect#isRetryable}).
 *
 * <p>Only SQL that MariaDB 10.11 and MySQL 8 both run is used here, except the {@code RETURNING} clause of
 * {@link #claim} with {@code returning} (MariaDB 10.5 and later).
 */
final class MariaDbBatchSql {

    /** The most ids one statement takes: far below MariaDB's {@code in_predicate_conversion_threshold} (1,000). */
    static final int MAX_ROWS = 500;

    /**
     * The index hint of every statement that finds rows by an {@code IN} list. Without it, on a small table (or one
     * whose statistics say so) both products may scan the whole table or primary key instead of looking up each id,
     * and a locking read or an {@code UPDATE} then locks every row it scans under {@code REPEATABLE READ}: rows of
     * other batches, in table order, which deadlocks concurrent batches (seen with 16 threads on a 60-row table).
     * Forced to the primary key, each id is one lookup that locks that row (or, for an id without a row, the gap
     * where it would be).
     */
    private static final String BY_KEY = " FORCE INDEX (PRIMARY)";

    /** Row counts whose statement texts are kept. */
    static final int CACHED_ROWS = 256;

    private final String t;
    private final String now;
    private final String claimValues;
    private final String claimUpdate;
    private final String claimOutcome;
    private final String confirmValues;
    private final String confirmUpdate;
    private final String confirmClaimsValues;
    private final String confirmClaimsUpdate;
    private final String heldSet;
    private final String heldWhere;
    private final String lockForConfirm;
    private final String lockForRelease;
    private final String releaseSet;

    private final Texts claimReturning = new Texts();
    private final Texts claimPlain = new Texts();
    private final Texts readClaims = new Texts();
    private final Texts confirmUpsert = new Texts();
    private final Texts confirmClaims = new Texts();
    private final Texts confirmHeld = new Texts();
    private final Texts lockConfirm = new Texts();
    private final Texts lockRelease = new Texts();
    private final Texts release = new Texts();

    /**
     * @param t the quoted table name
     * @param now the database clock (the statement's start)
     * @param leaseUntil the end of a new lease
     * @param claimExpires the expiry of a new claim (lease plus retention)
     * @param retained the expiry of a confirmed or released id
     * @param claimable the claimable condition over unqualified columns
     */
    MariaDbBatchSql(String t, String now, String leaseUntil, String claimExpires, String retained, String claimable) {
        this.t = t;
        this.now = now;
        this.claimValues = "(?, 0, ?, 1, " + leaseUntil + ", " + claimExpires + ", ?, ?)";
        // as the single-id claim: the first assignment decides on the original row and writes this statement's
        // token only where the row was claimable; every later one copies the new value only where it did
        String won = "claim_token = VALUES(claim_token)";
        this.claimUpdate = "ON DUPLICATE KEY UPDATE\n"
                + "  claim_token = IF(" + claimable + ", VALUES(claim_token), claim_token),\n"
                + "  attempts = IF(" + won + ", IF(expires_at <= " + now + ", 1, attempts + 1), attempts),\n"
                + "  state = IF(" + won + ", 0, state),\n"
                + "  owner = IF(" + won + ", VALUES(owner), owner),\n"
                + "  lease_until = IF(" + won + ", VALUES(lease_until), lease_until),\n"
                + "  expires_at = IF(" + won + ", VALUES(expires_at), expires_at),\n"
                + "  fingerprint = IF(" + won + ", VALUES(fingerprint), fingerprint)";
        // (id, code, attempts, fingerprint) of a row after the claim; parameters: 1 token, 2 token. The same
        // classification as the single-id read-back (LockingDialect.readClaim).
        this.claimOutcome = "id, CASE WHEN claim_token = ? THEN " + StoreDialect.CLAIMED
                + " WHEN state = 1 AND expires_at > " + now + " THEN " + StoreDialect.ALREADY_CONFIRMED
                + " ELSE " + StoreDialect.IN_PROGRESS + " END,\n"
                + "       CASE WHEN expires_at > " + now + " THEN attempts ELSE 0 END,\n"
                + "       CASE WHEN claim_token = ? OR (expires_at > " + now + " AND (state = 1 OR (state = 0 AND"
                + " lease_until > " + now + "))) THEN fingerprint END";
        this.confirmValues = "(?, 1, NULL, ?, NULL, " + retained + ")";
        // The fenced confirm of MariaDB in one statement. The first assignment decides on the original row whether
        // the claim held it (its live lease, or a confirm of this very claim in a caller's transaction) and records
        // that by writing the call's token; a row confirmed in a caller's transaction (the marker: confirmed, owner
        // set) is otherwise left as it is; every other row is confirmed as by the plain upsert. The order matters:
        // each assignment sees the new values of the ones before it, so owner is decided before state is set, and
        // expires_at after owner (only a marker row still has an owner by then).
        String marker = "state = 1 AND owner IS NOT NULL AND expires_at > " + now;
        this.confirmClaimsValues = "(?, 1, NULL, ?, NULL, " + retained + ", NULL)";
        this.confirmClaimsUpdate = "ON DUPLICATE KEY UPDATE\n"
                + "  claim_token = IF((state = 0 AND owner = ? AND attempts = VALUES(attempts) AND lease_until > " + now
                + ")\n      OR (state = 1 AND owner = ? AND attempts = VALUES(attempts) AND expires_at > " + now
                + "), ?, claim_token),\n"
                + "  attempts = IF(expires_at <= " + now + ", VALUES(attempts), attempts),\n"
                + "  fingerprint = IF(expires_at <= " + now + ", NULL, fingerprint),\n"
                + "  owner = IF(" + marker + ", owner, NULL),\n"
                + "  state = 1, lease_until = NULL,\n"
                + "  expires_at = IF(" + marker + ", expires_at, VALUES(expires_at))\n"
                + "RETURNING id, claim_token = ?";
        // as the single-id confirm: attempts and fingerprint first, they read the original expires_at
        this.confirmUpdate = "ON DUPLICATE KEY UPDATE\n"
                + "  attempts = IF(expires_at <= " + now + ", VALUES(attempts), attempts),\n"
                + "  fingerprint = IF(expires_at <= " + now + ", NULL, fingerprint),\n"
                + "  state = 1, owner = NULL, lease_until = NULL, expires_at = VALUES(expires_at)";
        // claim_token takes the confirming call's token: the rows this update confirmed can then be told apart in
        // the same transaction (no claim ever reads a confirmed row as its own: a claim compares its own token)
        this.heldSet = "UPDATE " + t + BY_KEY + " SET state = 1, owner = NULL, lease_until = NULL, expires_at = "
                + retained + ", claim_token = ?";
        this.heldWhere = " AND state = 0 AND owner = ? AND lease_until > " + now;
        this.lockForConfirm = "SELECT id, state, owner = ?, attempts, lease_until > " + now + ", expires_at > " + now
                + ", owner IS NOT NULL, claim_token = ? FROM " + t + BY_KEY + " WHERE id IN ";
        this.lockForRelease = "SELECT id, attempts FROM " + t + BY_KEY + " WHERE id IN ";
        this.releaseSet = "UPDATE " + t + BY_KEY + " SET state = 2, owner = NULL, lease_until = NULL, expires_at = "
                + retained + " WHERE id IN ";
    }

    /**
     * The claim of n ids. Parameters: per id (id, owner, fingerprint, token), then, with {@code returning}, token,
     * token. With {@code returning} (MariaDB only) it returns {@code (id, code, attempts, fingerprint)} of every row
     * as the statement left it, read under the row lock it took; without, it returns nothing and {@link #readClaims}
     * reads the rows back in the same transaction.
     */
    String claim(int n, boolean returning) {
        return (returning ? claimReturning : claimPlain).get(n, rows -> "INSERT INTO " + t
                + " (id, state, owner, attempts, lease_until, expires_at, fingerprint, claim_token)\nVALUES "
                + repeat(claimValues, rows) + "\n" + claimUpdate
                + (returning ? "\nRETURNING " + claimOutcome : ""));
    }

    /**
     * Reads n claimed rows back, in the claim's transaction (whose claim holds every row's lock). Parameters: token,
     * token, then the n ids. Returns {@code (id, code, attempts, fingerprint)} per row.
     */
    String readClaims(int n) {
        return readClaims.get(n, rows -> "SELECT " + claimOutcome + "\n  FROM " + t + BY_KEY + " WHERE id IN "
                + list(rows) + " FOR UPDATE");
    }

    /**
     * Records completion of n ids whatever their rows' state, as the single-id confirm does. Parameters: per id
     * (id, attempts recorded for a new or forgotten row).
     */
    String confirmUpsert(int n) {
        return confirmUpsert.get(n, rows -> "INSERT INTO " + t
                + " (id, state, owner, attempts, lease_until, expires_at)\nVALUES " + repeat(confirmValues, rows)
                + "\n" + confirmUpdate);
    }

    /**
     * The whole fenced confirm of n claims in one statement (MariaDB only: it needs {@code RETURNING}): records
     * completion of every id as the single-id fenced confirm does and returns {@code (id, held)} per row, held when
     * the claim still held its live lease or had confirmed the id in a caller's transaction. Parameters: per claim
     * (id, attempt), then owner, owner, token, token.
     */
    String confirmClaims(int n) {
        return confirmClaims.get(n, rows -> "INSERT INTO " + t
                + " (id, state, owner, attempts, lease_until, expires_at, claim_token)\nVALUES "
                + repeat(confirmClaimsValues, rows) + "\n" + confirmClaimsUpdate);
    }

    /**
     * Confirms the claims among n (id, attempt) pairs that still hold their live lease, writing the call's token; the
     * update count says how many did. Parameters: token, the n ids, owner, then per claim (id, attempt).
     */
    String confirmHeld(int n) {
        return confirmHeld.get(n, rows -> heldSet + "\n WHERE id IN " + list(rows) + heldWhere
                + " AND (id, attempts) IN (" + repeat("(?, ?)", rows) + ")");
    }

    /**
     * Locks the rows of n ids and reads what a fenced confirm decides on. Parameters: owner, token, then the n ids.
     * Returns {@code (id, state, owner is this owner, attempts, lease live, remembered, owner set, confirmed by the
     * token's call)} per existing row.
     */
    String lockForConfirm(int n) {
        return lockConfirm.get(n, rows -> lockForConfirm + list(rows) + " FOR UPDATE");
    }

    /**
     * Locks the rows of n ids and reads the owner's live (unconfirmed, remembered) claims among them. Parameters: the
     * n ids, owner. Returns {@code (id, attempts)} per such row.
     */
    String lockForRelease(int n) {
        return lockRelease.get(n, rows -> lockForRelease + list(rows) + " AND state = 0 AND owner = ? AND expires_at > "
                + now + " FOR UPDATE");
    }

    /** Releases n rows that {@link #lockForRelease} locked and chose. Parameters: the n ids. */
    String release(int n) {
        return release.get(n, rows -> releaseSet + list(rows));
    }

    private static String list(int n) {
        return "(" + repeat("?", n) + ")";
    }

    private static String repeat(String item, int n) {
        StringBuilder sb = new StringBuilder((item.length() + 2) * n);
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(item);
        }
        return sb.toString();
    }

    /** One statement's texts by row count, built on first use. */
    private static final class Texts {
        private final AtomicReferenceArray<String> byRows = new AtomicReferenceArray<>(CACHED_ROWS + 1);

        String get(int n, IntFunction<String> build) {
            if (n < 1 || n > MAX_ROWS) {
                throw new IllegalArgumentException("rows must be 1 to " + MAX_ROWS + ", but was " + n);
            }
            if (n > CACHED_ROWS) {
                return build.apply(n);
            }
            String text = byRows.get(n);
            if (text == null) {
                text = build.apply(n);
                byRows.set(n, text);
            }
            return text;
        }
    }
}

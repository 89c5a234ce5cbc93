package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.acemq.amqp.api.Claim;

/**
 * What one database product needs to run the store: its SQL, how it binds and reads it, how many statements an
 * operation takes, and how it tells a refused key from an outage. {@code JdbcIdempotencyStore} holds one instance,
 * chosen from the connection's metadata (or set explicitly), and calls it with connections of its own.
 *
 * <p>Every method gets a connection in auto-commit mode unless it says otherwise, and leaves it in the mode it found
 * it. A method that needs more than one statement opens its own transaction on it, commits, and switches auto-commit
 * back on; called on a connection whose auto-commit is already off (the store's probe for a refused key, which rolls
 * back), it runs its statements in that transaction and neither commits nor rolls back.
 *
 * <p>Batch methods take <b>distinct, sorted</b> ids and write all or nothing.
 */
public interface StoreDialect {

    /** Claim result codes, shared by every dialect. */
    int CLAIMED = 0;
    /** See {@link #CLAIMED}. */
    int ALREADY_CONFIRMED = 1;
    /** See {@link #CLAIMED}. */
    int IN_PROGRESS = 2;

    /** @return the product name for messages */
    String name();

    /** @return the DDL of {@link #createSchema}, one statement per element */
    List<String> ddl();

    /** Creates the table if it does not exist, serialised against other processes doing the same. */
    void createSchema(Connection c) throws SQLException;

    /** @return the id's claim: CLAIMED with the new attempt, or who holds it */
    Claim acquire(Connection c, String id, UUID owner, String fingerprint) throws SQLException;

    /** Records completion of {@code id} whatever its state; {@code attempts} for a new or forgotten row. */
    void confirm(Connection c, String id, int attempts) throws SQLException;

    /** @return whether the claim still held its lease (or confirmed the id in a transaction itself); records completion */
    boolean confirmClaim(Connection c, Claim claim, UUID owner) throws SQLException;

    /**
     * Runs in the caller's transaction ({@code c} has auto-commit off); never commits or rolls back.
     *
     * @return [won, held]: won, this transaction recorded completion (false: already confirmed by another);
     *     held, the claim still held its live lease
     */
    boolean[] confirmInTransaction(Connection c, Claim claim, UUID owner) throws SQLException;

    /**
     * Runs in the caller's transaction ({@code c} has auto-commit off); never commits or rolls back. Locks the rows of
     * {@code ids} that exist, in id order, until the caller's transaction ends (a concurrent confirm or claim of one of
     * them waits for it), and tells which are confirmed already. By default one statement per id; a dialect may do it
     * in one.
     *
     * @param ids distinct ids, sorted
     * @return the ids among them that are confirmed (and not forgotten)
     */
    default Set<String> lockInTransaction(Connection c, String[] ids) throws SQLException {
        Set<String> confirmed = new java.util.HashSet<>();
        for (String id : ids) {
            if (lockOneInTransaction(c, id)) {
                confirmed.add(id);
            }
        }
        return confirmed;
    }

    /**
     * One id of {@link #lockInTransaction}.
     *
     * @return whether the id is confirmed (and not forgotten)
     */
    boolean lockOneInTransaction(Connection c, String id) throws SQLException;

    /**
     * {@link #confirmInTransaction} for many claims, in the caller's transaction. By default one call per claim; a
     * dialect may do it in one statement.
     *
     * @param claims claims of distinct ids, sorted by id
     * @return per id, [won, held] as {@link #confirmInTransaction} answers
     */
    default Map<String, boolean[]> confirmAllInTransaction(Connection c, List<Claim> claims, UUID owner)
            throws SQLException {
        Map<String, boolean[]> out = new java.util.HashMap<>();
        for (Claim claim : claims) {
            out.put(claim.messageId(), confirmInTransaction(c, claim, owner));
        }
        return out;
    }

    /** @return whether the lease the claim names was extended */
    boolean renew(Connection c, Claim claim, UUID owner) throws SQLException;

    /** @return whether the lease the claim names was released */
    boolean releaseClaim(Connection c, Claim claim, UUID owner) throws SQLException;

    /** Releases the id if {@code owner} holds it, whatever the attempt. */
    void releaseOwned(Connection c, String id, UUID owner) throws SQLException;

    /** @return whether the id is confirmed and remembered */
    boolean isConfirmed(Connection c, String id) throws SQLException;

    /** @return the attempt count of a remembered id, 0 otherwise */
    int attempts(Connection c, String id) throws SQLException;

    /** @return whether a released or lapsed id's row was deleted */
    boolean resetAttempts(Connection c, String id) throws SQLException;

    /** @return the id's row, or null */
    StoredRow describe(Connection c, String id) throws SQLException;

    /** @return per escaped scope (null: keys without one), the counts rows, confirmed, live, retryable, forgotten */
    List<ScopeRow> scopes(Connection c) throws SQLException;

    /** @return up to {@code limit} keys matching the LIKE {@code pattern} ({@code \} escapes), in key order */
    Map<String, StoredRow> keysLike(Connection c, String pattern, int limit) throws SQLException;

    /** @return how many forgotten rows were deleted, at most {@code batchSize}, in one short statement */
    int purgeBatch(Connection c, int batchSize) throws SQLException;

    /** @return (id to claim) for the ids that have a row or were claimed; prints are the ids' fingerprints */
    Map<String, Claim> acquireAll(Connection c, String[] ids, String[] prints, UUID owner) throws SQLException;

    /** Records completion of every id, as {@link #confirm} with attempts 0. */
    void confirmAll(Connection c, String[] ids) throws SQLException;

    /** @return the ids whose claim (same index in {@code attempts}) held, as {@link #confirmClaim} per id */
    Set<String> confirmClaims(Connection c, String[] ids, Integer[] attempts, UUID owner) throws SQLException;

    /**
     * @param ids ids, sorted; an id may repeat with different attempts
     * @return {@code attempt + ":" + id} of every released lease
     */
    Set<String> releaseClaims(Connection c, String[] ids, Integer[] attempts, UUID owner) throws SQLException;

    /** @return whether the database refused the data of a statement (this key cannot be stored), not an outage */
    boolean isRefusedKey(SQLException e);

    /** @return whether the statement was aborted as a deadlock victim or serialisation failure and had no effect */
    boolean isRetryable(SQLException e);

    /** One id's row, as the operator's tool shows it. */
    record StoredRow(int state, int attempts, boolean live, boolean remembered, OffsetDateTime leaseUntil,
                     OffsetDateTime expiresAt, String fingerprint) {
    }

    /** The counts of one scope. */
    record ScopeRow(String escapedScope, long rows, long confirmed, long live, long retryable, long forgotten) {
    }
}

package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;

/**
 * The SQL of the transactional outbox on one database product, for one outbox table: {@link PostgresOutbox},
 * {@link LockingOutbox} (MariaDB / MySQL and H2). {@link JdbcOutbox} decides what runs when; a dialect only says how.
 *
 * <p>Every method gets a connection of the store's own in auto-commit mode, except {@link #insert}, which runs in the
 * caller's transaction. A method that needs more than one statement runs them in one transaction of its own
 * ({@link Transactions#run}).
 */
interface OutboxDialect {

    /** @return the DDL of {@link #createSchema}, one statement per element */
    List<String> ddl();

    /** Creates the table and its indexes if they do not exist, serialised against other processes doing the same. */
    void createSchema(Connection c) throws SQLException;

    /**
     * Writes one handler's entries in the caller's transaction (auto-commit off; neither commits nor rolls back). An
     * entry whose (incoming key, position) is already in the table replaces that row, pending again: only a handler
     * that ran again after its incoming message was forgotten (past the retention) can meet its own earlier row.
     *
     * @param entries entries of one incoming key, distinct positions, at least one
     */
    void insert(Connection c, List<OutboxEntry> entries) throws SQLException;

    /** @return the pending entries of the key, in position order */
    List<OutboxEntry> pending(Connection c, String incomingKey) throws SQLException;

    /**
     * Hands out up to {@code limit} pending entries written at least {@code minAge} ago and not held, oldest first, and
     * holds them for {@code hold}: rows locked by a concurrent sweep are skipped, not waited for.
     */
    List<OutboxEntry> sweep(Connection c, Duration minAge, int limit) throws SQLException;

    /**
     * Marks the entries dispatched, those still pending; one statement.
     *
     * @param keys incoming keys, sorted together with {@code positions}; (key, position) pairs distinct
     */
    void dispatched(Connection c, String[] keys, int[] positions) throws SQLException;

    /** Counts a failed dispatch of a pending entry, keeps the error and holds the row for {@code hold}. */
    void failed(Connection c, String incomingKey, int position, String error) throws SQLException;

    /** @return the pending and failing counts and the oldest pending row's creation time (null if none) */
    OutboxStore.Status status(Connection c) throws SQLException;

    /** @return how many dispatched rows older than the retention were deleted, at most {@code batchSize} */
    int purgeBatch(Connection c, int batchSize) throws SQLException;

    /** @return the most (key, position) pairs one {@link #dispatched} statement may carry */
    int maxPairsPerStatement();

    /** @return whether the statement failed because the outbox table does not exist */
    boolean isUndefinedTable(SQLException e);

    /** @return whether the database refused a value of the statement (a key it cannot hold), not an outage */
    boolean isRefusedKey(SQLException e);

    /** @return whether the statement was aborted as a deadlock victim or a serialisation failure and had no effect */
    boolean isRetryable(SQLException e);
}

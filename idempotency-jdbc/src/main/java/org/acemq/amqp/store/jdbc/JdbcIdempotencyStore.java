package org.acemq.amqp.store.jdbc;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.IntUnaryOperator;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.store.jdbc.internal.BatchStatements;
import org.acemq.amqp.store.jdbc.internal.JdbcGroupCommit;
import org.acemq.amqp.store.jdbc.internal.JdbcOutbox;
import org.acemq.amqp.store.jdbc.internal.Dialects;
import org.acemq.amqp.store.jdbc.internal.StoreDialect;
import org.acemq.amqp.store.jdbc.internal.TableName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LeasedIdempotencyStore} in a database table, shared by any number of consumers and processes: PostgreSQL,
 * MariaDB / MySQL, or H2 for tests ({@link JdbcDialect}, read from the first connection's metadata unless
 * {@linkplain Builder#dialect set}). What follows describes PostgreSQL; on MariaDB a claim is an upsert that decides
 * and returns its rows ({@code RETURNING}; on MySQL and H2 plus a read-back), a fenced confirm that lost the fast path
 * is a short transaction of a few statements, and a batch is a few multi-row statements with one commit (H2: each id's
 * statements in one transaction), with the same guarantees ({@code docs/jdbc-store.md}, "Dialects").
 *
 * <pre>{@code
 * HikariDataSource pool = new HikariDataSource(config);          // any DataSource; a pool is recommended
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool)
 *         .tableName("acemq_idempotency")                        // the default
 *         .lease(Duration.ofSeconds(30))                         // the default
 *         .retention(Duration.ofHours(24))                       // the default
 *         .build();
 * store.createSchema();                                          // optional: CREATE TABLE IF NOT EXISTS
 * }</pre>
 *
 * <h2>How it works</h2>
 * One row per message id holds its state (claimed, confirmed or released), the owner and attempt number of the
 * current claim, the end of the lease and the time the row may be forgotten. Every operation is <b>one SQL
 * statement in one round trip, in autocommit</b>: a claim is an {@code INSERT … ON CONFLICT DO UPDATE … WHERE
 * <claimable>}, which PostgreSQL decides atomically on the latest row version, so of any number of concurrent
 * claimers across any number of processes exactly one wins. Nothing is ever half-written. The SQL is in
 * {@code docs/jdbc-store.md}; the DDL ships as the resource {@code /org/acemq/amqp/store/jdbc/postgresql.sql}.
 *
 * <p><b>Batch calls</b> ({@link #acquireAll}, {@link #confirmAll}, {@link #releaseAll}) run one statement, one
 * transaction and one commit per call, all or nothing (on MariaDB / MySQL one to three multi-row statements in that
 * one transaction).
 *
 * <p><b>Group commit</b> ({@linkplain Builder#groupCommit(boolean) on by default}, nothing to tune): while fewer
 * calls run than the pool has connections, every {@code acquire}, {@code confirm} and {@code release(Claim)} runs its
 * own statement at once; calls beyond that, which would otherwise wait for a connection, are coalesced into one
 * statement of the same SQL over {@code unnest(ids)} per batch, leader/follower style. Each caller gets exactly the
 * answer of its own call; a batch is one transaction, and if it fails every caller in it gets a
 * {@link StoreUnavailableException} (or, if PostgreSQL refused one caller's id, only that caller an
 * {@link InvalidMessageIdException}). Details in {@code docs/jdbc-store.md}.
 *
 * <p><b>The database clock decides.</b> Every lease and expiry is computed and compared with the database's
 * {@code now()}; the JVM clock is never consulted, so consumers on machines with skewed clocks agree.
 *
 * <p><b>Owner and fencing.</b> Each store instance has an owner id (random unless {@linkplain Builder#owner set}).
 * {@link #release(String)} acts only on this owner's claims; {@link #renew(Claim)} and {@link #release(Claim)}
 * act only on the very lease the claim names (owner and attempt number). Two store instances over the same table
 * behave like two processes.
 *
 * <h2>Outbox</h2>
 * The store is also an {@link OutboxStore}: with {@link JdbcTransactionalHandler}, the messages a handler sends
 * through its envelope are written to an outbox table ({@linkplain Builder#outboxTableName default}
 * {@value #DEFAULT_OUTBOX_TABLE_NAME} next to {@value #DEFAULT_TABLE_NAME}) in the handler's own transaction, with the
 * confirm, and the runtime dispatches them after the commit. Marks of dispatched messages are group-committed; the
 * sweep hands each pending row to one process at a time; {@link #purgeExpired()} deletes dispatched rows after the
 * retention. {@code docs/jdbc-store.md}, "Outbox", has the table and the SQL.
 *
 * <h2>Connections and transactions</h2>
 * The store takes its own connection from the {@link DataSource} for every operation and returns it at once; it
 * never takes part in a caller's transaction, and a failure of the store never affects one (its statements do not
 * even raise duplicate-key errors). The DataSource must therefore hand out connections that are not bound to a
 * caller's transaction (not, for example, Spring's {@code TransactionAwareDataSourceProxy}). A connection that
 * arrives with auto-commit off (a pool configured that way) is switched to auto-commit for the statement and
 * switched back before it is returned. With the PostgreSQL driver the store checks that such a connection is idle
 * first, and refuses with an {@link IllegalStateException}, changing nothing, if it is inside a transaction.
 *
 * <h2>Errors</h2>
 * Invalid ids fail before any connection is taken (see {@link MessageIds#requireValid}). An id that PostgreSQL
 * refuses with a data error (SQLState class 22) is an {@link InvalidMessageIdException} for that id, never an outage.
 * Every other {@link SQLException} (server down, pool timeout, missing table, …) becomes a
 * {@link StoreUnavailableException} carrying it; the operation then had no effect.
 *
 * <h2>Housekeeping</h2>
 * Forgotten rows (past their retention) are ignored by every operation but stay in the table until
 * {@link #purgeExpired()} deletes them; call it periodically, for example once a minute from one scheduler.
 *
 * <p><b>Threading:</b> thread-safe; every method except the getters blocks on a database round trip. The number of
 * concurrent operations is bounded by the DataSource's pool.
 */
public final class JdbcIdempotencyStore implements LeasedIdempotencyStore, OutboxStore {

    /** Default {@link Builder#lease(Duration)}: 30 seconds. */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    /** Default {@link Builder#retention(Duration)}: 24 hours. */
    public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
    /** Default {@link Builder#tableName(String)}: {@value}. */
    public static final String DEFAULT_TABLE_NAME = "acemq_idempotency";
    /** The {@link Builder#outboxTableName(String) outbox table} next to the default table: {@value}. */
    public static final String DEFAULT_OUTBOX_TABLE_NAME = "acemq_outbox";
    /** Default {@link Builder#purgeBatchSize(int)}: {@value}. */
    public static final int DEFAULT_PURGE_BATCH_SIZE = 5_000;
    /** Default {@link Builder#purgePause(Duration)}: 20 milliseconds. */
    public static final Duration DEFAULT_PURGE_PAUSE = Duration.ofMillis(20);
    /** Default {@link Builder#groupCommit(int, int) maxBatch}: {@value}. */
    public static final int DEFAULT_GROUP_COMMIT_MAX_BATCH = 128;
    /**
     * Default {@link Builder#groupCommit(int, int) maxInFlight} when the store cannot read the DataSource's pool size:
     * {@value}. When it can (HikariCP, Apache Commons DBCP 2, Tomcat JDBC, c3p0), the default is that pool size.
     */
    public static final int DEFAULT_GROUP_COMMIT_MAX_IN_FLIGHT = 8;

    private static final Logger LOG = LoggerFactory.getLogger(JdbcIdempotencyStore.class);

    private final DataSource dataSource;
    private final TableName table;
    private final Duration lease;
    private final Duration retention;
    private final UUID owner;
    private final int purgeBatchSize;
    private final Duration purgePause;
    private volatile StoreDialect dialect;
    private volatile JdbcDialect dialectKind;
    private final BatchStatements batches;
    private final BatchRunner batchRunner = new BatchRunner();
    private final JdbcGroupCommit groupCommit; // null when group commit is off
    private final int groupCommitMaxInFlight;
    private final JdbcOutbox outbox;
    private final boolean mysqlStatements; // tests only, see Builder.mysqlStatements

    private JdbcIdempotencyStore(Builder b) {
        this.dataSource = b.dataSource;
        this.table = b.table;
        this.lease = b.lease;
        this.retention = b.retention;
        this.owner = b.owner != null ? b.owner : UUID.randomUUID();
        this.purgeBatchSize = b.purgeBatchSize;
        this.purgePause = b.purgePause;
        this.mysqlStatements = b.mysqlStatements;
        if (b.dialect != null) {
            this.dialectKind = b.dialect;
            this.dialect = Dialects.create(b.dialect.name(), table, lease, retention, b.mysqlStatements);
        }
        this.batches = new BatchStatements(new BatchStatements.DialectSource() {
            @Override
            public StoreDialect on(Connection c) throws SQLException {
                return sql(c);
            }

            @Override
            public StoreDialect known() {
                return dialect;
            }
        }, owner);
        this.groupCommitMaxInFlight = b.groupCommitMaxInFlight > 0 ? b.groupCommitMaxInFlight
                : PoolSize.of(b.dataSource, DEFAULT_GROUP_COMMIT_MAX_IN_FLIGHT);
        this.groupCommit = b.groupCommitMaxBatch == 0 ? null
                : new JdbcGroupCommit(batches, table.toString(), b.groupCommitMaxBatch, groupCommitMaxInFlight,
                        b.arraySqlForSingletons, new GroupBackend());
        this.outbox = new JdbcOutbox(b.outboxTable != null ? b.outboxTable : JdbcOutbox.defaultFor(table), lease,
                retention, b.groupCommitMaxBatch, b.outboxMarkFlushDelay, new OutboxBackend());
    }

    /**
     * Starts a builder.
     *
     * @param dataSource where the store gets its connections; must not hand out connections bound to a caller's
     *     transaction
     * @return a builder with every default set
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    // ---------------------------------------------------------------------------------------------------------
    // schema and housekeeping

    /**
     * Creates the table and its index, and the {@linkplain Builder#outboxTableName outbox table} and its indexes, if
     * they do not exist yet. Idempotent, and safe to call from several processes at once (they serialise on a
     * transaction-scoped advisory lock). Optional: the DDL is also shipped as the resources
     * {@code /org/acemq/amqp/store/jdbc/postgresql.sql} and {@code postgresql-outbox.sql} (and the MariaDB and H2
     * ones) for schema-migration tools.
     *
     * @throws StoreUnavailableException if the database cannot be reached or refuses the DDL
     */
    public void createSchema() {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            requireNoCallerTransaction(c, autoCommit);
            sql(c).createSchema(c);
            outbox.createSchema(c);
            LOG.debug("Schema for idempotency table {} and outbox table {} is in place", table, outbox);
        } catch (SQLException e) {
            throw unavailable("createSchema", null, e);
        }
    }

    /**
     * @return the DDL {@link #createSchema()} runs, with the table names filled in, one statement per element: the
     *     store's table, then the outbox table; for the {@linkplain #dialect() dialect}, which this may read from a
     *     connection
     */
    public List<String> schemaStatements() {
        List<String> ddl = new ArrayList<>(sql().ddl());
        ddl.addAll(outbox.ddl(dialectKind.name()));
        return List.copyOf(ddl);
    }

    /**
     * @return the database product the store runs on: as {@linkplain Builder#dialect set}, else read once from a
     *     connection's metadata (this call may take a connection to read it)
     * @throws StoreUnavailableException if it must be read and the database cannot be reached
     */
    public JdbcDialect dialect() {
        sql();
        return dialectKind;
    }

    /**
     * Deletes up to {@code batchSize} forgotten rows (those past their retention) in one statement. Rows that are
     * not forgotten are never deleted, even if they were re-claimed while the statement ran.
     *
     * @param batchSize the most rows to delete, at least 1
     * @return how many rows were deleted; less than {@code batchSize} means none are left (for now)
     * @throws StoreUnavailableException if the database cannot be reached
     */
    public int purgeExpired(int batchSize) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be >= 1, but was " + batchSize);
        }
        return run("purgeExpired", null, c -> sql(c).purgeBatch(c, batchSize));
    }

    /**
     * Deletes every forgotten row, {@linkplain Builder#purgeBatchSize batch} by batch, pausing
     * {@linkplain Builder#purgePause between batches} so that the purge does not compete with consumers, and then, the
     * same way, every outbox row that was dispatched longer than the retention ago (pending outbox rows are never
     * deleted; an outbox table that does not exist is skipped). Each batch is its own short transaction. Returns
     * early, with the interrupt flag set, if the thread is interrupted.
     *
     * @return how many rows were deleted, from both tables
     * @throws StoreUnavailableException if the database cannot be reached (rows deleted by earlier batches stay
     *     deleted)
     */
    public long purgeExpired() {
        long start = System.nanoTime();
        long ids = purgeInBatches(this::purgeExpired);
        long sent = Thread.currentThread().isInterrupted() ? 0 : purgeInBatches(outbox::purgeBatch);
        if (ids + sent > 0) {
            LOG.debug("Purged {} expired ids from {} and {} dispatched messages from {} in {} ms", ids, table, sent,
                    outbox, Duration.ofNanos(System.nanoTime() - start).toMillis());
        }
        return ids + sent;
    }

    private long purgeInBatches(IntUnaryOperator batch) {
        long total = 0;
        while (true) {
            int deleted = batch.applyAsInt(purgeBatchSize);
            total += deleted;
            if (deleted < purgeBatchSize) {
                return total;
            }
            if (!purgePause.isZero()) {
                try {
                    Thread.sleep(purgePause.toMillis(), purgePause.toNanosPart() % 1_000_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return total;
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // IdempotencyStore

    @Override
    public boolean claim(String messageId) {
        return acquire(messageId).claimed();
    }

    @Override
    public ClaimResult tryClaim(String messageId) {
        return acquire(messageId).result();
    }

    @Override
    public void confirm(String messageId) {
        MessageIds.requireValid(messageId);
        if (groupCommit != null) {
            groupCommit.confirm(messageId);
            return;
        }
        confirmNow(messageId);
    }

    private void confirmNow(String messageId) {
        run("confirm", messageId, c -> {
            sql(c).confirm(c, messageId, 0);
            return null;
        });
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one statement, one transaction and one commit for the whole list (a list of one runs the single-id
     * statement), whether or not group commit is on; see {@code docs/jdbc-store.md}. If PostgreSQL refuses one of the
     * ids (SQLState class 22), nothing was written; the store then finds which id it was, by running the single-id
     * statement for each id in a transaction that it rolls back, and throws {@link InvalidMessageIdException} naming
     * it.
     */
    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        return acquireAll(messageIds, Collections.nCopies(messageIds.size(), null));
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: as {@link #acquireAll(List)}, one statement for the whole list, each fingerprint recorded with its
     * id's claim.
     */
    @Override
    public List<Claim> acquireAll(List<String> messageIds, List<String> fingerprints) {
        Objects.requireNonNull(fingerprints, "fingerprints must not be null");
        if (messageIds.size() != fingerprints.size()) {
            throw new IllegalArgumentException("one fingerprint per identifier: " + messageIds.size()
                    + " identifiers, " + fingerprints.size() + " fingerprints");
        }
        for (int i = 0; i < messageIds.size(); i++) {
            MessageIds.requireValid(messageIds.get(i));
            MessageIds.requireValidFingerprint(fingerprints.get(i));
        }
        if (messageIds.size() <= 1) {
            return messageIds.isEmpty() ? List.of() : List.of(acquire(messageIds.get(0), fingerprints.get(0)));
        }
        try {
            return Arrays.asList(batches.acquire(batchRunner, messageIds, fingerprints));
        } catch (StoreUnavailableException e) {
            throw refusedIdOr(e, "acquire", messageIds,
                    (c, id) -> acquireOn(c, id, fingerprints.get(messageIds.indexOf(id))));
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one statement, one transaction and one commit for the whole list (a list of one runs the single-id
     * statement): completion is recorded for all of the claims or for none. Like {@link #confirm(Claim)}, it leaves
     * alone (and reports as held) an id that this very claim already confirmed through {@link JdbcTransactionalHandler}.
     */
    @Override
    public List<Claim> confirmAll(List<Claim> claims) {
        for (Claim claim : claims) {
            MessageIds.requireValid(Objects.requireNonNull(claim, "claim must not be null").messageId());
        }
        if (claims.size() <= 1) {
            return claims.isEmpty() || confirm(claims.get(0)) ? List.of() : List.of(claims.get(0));
        }
        boolean[] held;
        try {
            held = batches.confirmClaims(batchRunner, claims);
        } catch (StoreUnavailableException e) {
            throw refusedIdOr(e, "confirm", ids(claims), byId(claims, (c, claim) -> confirmOn(c, claim)));
        }
        List<Claim> lost = List.of();
        for (int i = 0; i < held.length; i++) {
            if (!held[i]) {
                if (lost.isEmpty()) {
                    lost = new ArrayList<>();
                }
                lost.add(claims.get(i));
            }
        }
        return lost;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one statement, one transaction and one commit for the claimed ones of the list (a list of one runs the
     * single-id statement).
     */
    @Override
    public void releaseAll(List<Claim> claims) {
        List<Claim> owned = new ArrayList<>(claims.size());
        for (Claim claim : claims) {
            if (isOwnable(claim)) {
                owned.add(claim);
            }
        }
        if (owned.size() <= 1) {
            if (!owned.isEmpty()) {
                release(owned.get(0));
            }
            return;
        }
        try {
            batches.releaseClaims(batchRunner, owned);
        } catch (StoreUnavailableException e) {
            throw refusedIdOr(e, "release", ids(owned), byId(owned, (c, claim) -> releaseOn(c, claim)));
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one statement that deletes the id's row if it is released, or claimed with a lapsed lease (and not yet
     * forgotten):
     * {@code DELETE FROM <table> WHERE id = ? AND expires_at > now() AND (state = 2 OR (state = 0 AND lease_until <=
     * now()))}. Operators can run the same statement by hand, or the command-line tool
     * {@code org.acemq.amqp.store.jdbc.JdbcStoreTool reset-attempts} (see {@code docs/jdbc-store.md}).
     */
    @Override
    public boolean resetAttempts(String messageId) {
        MessageIds.requireValid(messageId);
        return run("resetAttempts", messageId, c -> sql(c).resetAttempts(c, messageId));
    }

    @Override
    public void release(String messageId) {
        MessageIds.requireValid(messageId);
        run("release", messageId, c -> {
            sql(c).releaseOwned(c, messageId, owner);
            return null;
        });
    }

    @Override
    public boolean isConfirmed(String messageId) {
        MessageIds.requireValid(messageId);
        return run("isConfirmed", messageId, c -> sql(c).isConfirmed(c, messageId));
    }

    // ---------------------------------------------------------------------------------------------------------
    // LeasedIdempotencyStore

    /** {@inheritDoc} Here: {@code acquire(messageId, null)}, a claim that records no fingerprint. */
    @Override
    public Claim acquire(String messageId) {
        return acquire(messageId, null);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: the same single statement as {@link #acquire(String)}; the fingerprint is a column of the id's row,
     * written by the claim and read back by the same statement.
     */
    @Override
    public Claim acquire(String messageId, String fingerprint) {
        MessageIds.requireValid(messageId);
        MessageIds.requireValidFingerprint(fingerprint);
        // With group commit on, concurrent claims are coalesced into one unnest() statement (see JdbcGroupCommit);
        // a lone claim still runs the statement below.
        return groupCommit != null ? groupCommit.acquire(messageId, fingerprint) : acquireNow(messageId, fingerprint);
    }

    /** @return {@code true}: the fingerprint is a column of the table */
    @Override
    public boolean recordsFingerprints() {
        return true;
    }

    private Claim acquireNow(String messageId, String fingerprint) {
        return run("acquire", messageId, c -> acquireOn(c, messageId, fingerprint));
    }

    private Claim acquireOn(Connection c, String messageId, String fingerprint) throws SQLException {
        return sql(c).acquire(c, messageId, owner, fingerprint);
    }

    @Override
    public boolean renew(Claim claim) {
        if (!isOwnable(claim)) {
            return false;
        }
        return run("renew", claim.messageId(), c -> sql(c).renew(c, claim, owner));
    }

    @Override
    public boolean confirm(Claim claim) {
        Objects.requireNonNull(claim, "claim must not be null");
        MessageIds.requireValid(claim.messageId());
        return groupCommit != null ? groupCommit.confirm(claim) : confirmNow(claim);
    }

    private boolean confirmNow(Claim claim) {
        return run("confirm", claim.messageId(), c -> confirmOn(c, claim));
    }

    private boolean confirmOn(Connection c, Claim claim) throws SQLException {
        return sql(c).confirmClaim(c, claim, owner);
    }

    /** What {@link #confirmInTransaction} found. */
    enum TransactionalConfirm {
        /** Completion recorded in the caller's transaction, and the claim still held its lease. */
        CONFIRMED,
        /** Completion recorded in the caller's transaction, although the lease had lapsed or been taken over. */
        CONFIRMED_LEASE_LOST,
        /** The id is already confirmed by a transaction that committed first: the caller must roll back. */
        ALREADY_CONFIRMED
    }

    /**
     * Records the completion of {@code claim} in the caller's open transaction on {@code connection}, for
     * {@link JdbcTransactionalHandler}. Nothing is committed or rolled back here. The row stays locked until the
     * caller ends the transaction; a concurrent confirm of the same id waits for that and then sees the outcome,
     * so of any number of transactions confirming one id at most one commits a {@code CONFIRMED*} answer.
     *
     * @param connection a connection with auto-commit off, inside the caller's transaction
     * @param claim the claim the work was done under (owner: this store's)
     * @return whether this transaction recorded the completion, or must roll back
     * @throws SQLException as the driver throws it; the caller then rolls back
     */
    TransactionalConfirm confirmInTransaction(Connection connection, Claim claim) throws SQLException {
        Objects.requireNonNull(connection, "connection must not be null");
        Objects.requireNonNull(claim, "claim must not be null");
        String messageId = MessageIds.requireValid(claim.messageId());
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("confirmInTransaction needs a connection with auto-commit off");
        }
        boolean[] wonHeld = sql(connection).confirmInTransaction(connection, claim, owner);
        if (!wonHeld[0]) {
            return TransactionalConfirm.ALREADY_CONFIRMED;
        }
        return wonHeld[1] && claim.claimed() ? TransactionalConfirm.CONFIRMED : TransactionalConfirm.CONFIRMED_LEASE_LOST;
    }

    /**
     * For {@link JdbcTransactionalBatchHandler}, in the caller's open transaction on {@code connection}, before the
     * batch's work: locks the rows of {@code messageIds} that exist, in id order, until the caller ends the
     * transaction, so that no other owner confirms (or claims) one of them meanwhile, and tells which are confirmed
     * already: the work must not run for those. Nothing is committed or rolled back here.
     *
     * @param connection a connection with auto-commit off, inside the caller's transaction
     * @param messageIds the batch's ids, distinct
     * @return those among them already confirmed
     * @throws SQLException as the driver throws it; the caller then rolls back
     */
    Set<String> lockInTransaction(Connection connection, List<String> messageIds) throws SQLException {
        Objects.requireNonNull(connection, "connection must not be null");
        requireTransaction(connection, "lockInTransaction");
        String[] ids = new String[messageIds.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = MessageIds.requireValid(messageIds.get(i));
        }
        Arrays.sort(ids);
        return sql(connection).lockInTransaction(connection, ids);
    }

    /**
     * {@link #confirmInTransaction} for many claims, with one statement where the dialect allows (PostgreSQL; one per
     * claim on MariaDB / MySQL and H2), in the caller's open transaction. Nothing is committed or rolled back here.
     *
     * @param connection a connection with auto-commit off, inside the caller's transaction
     * @param claims claims of distinct ids (owner: this store's)
     * @return per id, what {@link #confirmInTransaction} would have found
     * @throws SQLException as the driver throws it; the caller then rolls back
     */
    Map<String, TransactionalConfirm> confirmAllInTransaction(Connection connection, List<Claim> claims)
            throws SQLException {
        Objects.requireNonNull(connection, "connection must not be null");
        requireTransaction(connection, "confirmAllInTransaction");
        List<Claim> sorted = new ArrayList<>(claims);
        for (Claim c : sorted) {
            MessageIds.requireValid(Objects.requireNonNull(c, "claim must not be null").messageId());
        }
        sorted.sort(java.util.Comparator.comparing(Claim::messageId));
        Map<String, TransactionalConfirm> out = new java.util.HashMap<>();
        if (sorted.isEmpty()) {
            return out;
        }
        Map<String, boolean[]> answers = sql(connection).confirmAllInTransaction(connection, sorted, owner);
        for (Claim c : sorted) {
            boolean[] wonHeld = answers.get(c.messageId());
            out.put(c.messageId(), !wonHeld[0] ? TransactionalConfirm.ALREADY_CONFIRMED
                    : wonHeld[1] && c.claimed() ? TransactionalConfirm.CONFIRMED
                    : TransactionalConfirm.CONFIRMED_LEASE_LOST);
        }
        return out;
    }

    private static void requireTransaction(Connection connection, String what) throws SQLException {
        if (connection.getAutoCommit()) {
            throw new IllegalStateException(what + " needs a connection with auto-commit off");
        }
    }

    @Override
    public boolean release(Claim claim) {
        if (!isOwnable(claim)) {
            return false;
        }
        return groupCommit != null ? groupCommit.release(claim) : releaseNow(claim);
    }

    private boolean releaseNow(Claim claim) {
        return run("release", claim.messageId(), c -> releaseOn(c, claim));
    }

    private boolean releaseOn(Connection c, Claim claim) throws SQLException {
        return sql(c).releaseClaim(c, claim, owner);
    }

    @Override
    public int attempts(String messageId) {
        MessageIds.requireValid(messageId);
        return run("attempts", messageId, c -> sql(c).attempts(c, messageId));
    }

    /** What the table holds for one id, for the operator's tool. */
    record Row(int state, int attempts, boolean live, boolean remembered, java.time.OffsetDateTime leaseUntil,
               java.time.OffsetDateTime expiresAt, String fingerprint) {
    }

    /** @return the id's row as the database sees it now, or null if there is none (never claimed, or purged) */
    Row describe(String messageId) {
        MessageIds.requireValid(messageId);
        return run("describe", messageId, c -> row(sql(c).describe(c, messageId)));
    }

    private static Row row(StoreDialect.StoredRow r) {
        return r == null ? null : new Row(r.state(), r.attempts(), r.live(), r.remembered(), r.leaseUntil(),
                r.expiresAt(), r.fingerprint());
    }

    /**
     * What the table holds for one scope, for the operator's tool.
     *
     * @param scope the scope as {@link MessageIds#scopeOf} reads it back, or null for keys without one
     */
    record ScopeCount(String scope, long rows, long confirmed, long live, long retryable, long forgotten) {
    }

    /** @return the row counts of every scope in the table, in the order of the escaped scopes (a full scan) */
    List<ScopeCount> scopes() {
        return run("scopes", null, c -> {
            List<ScopeCount> counts = new ArrayList<>();
            for (StoreDialect.ScopeRow r : sql(c).scopes(c)) {
                String escaped = r.escapedScope();
                counts.add(new ScopeCount(escaped == null ? null : MessageIds.scopeOf(escaped + "|"), r.rows(),
                        r.confirmed(), r.live(), r.retryable(), r.forgotten()));
            }
            return counts;
        });
    }

    /**
     * @param scope a scope, as given to {@link MessageIds#scoped}
     * @param limit the most keys to return, at least 1
     * @return the store keys of that scope with their rows, in key order; never keys of another scope, however the
     *     scopes are spelled ({@code %} and {@code _} of the scope match only themselves)
     */
    Map<String, Row> keysOfScope(String scope, int limit) {
        String prefix = MessageIds.escapeScope(scope) + "|";
        String pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%";
        return run("keysOfScope", null, c -> {
            Map<String, Row> rows = new LinkedHashMap<>();
            sql(c).keysLike(c, pattern, limit).forEach((key, r) -> rows.put(key, row(r)));
            return rows;
        });
    }

    // ---------------------------------------------------------------------------------------------------------
    // OutboxStore (docs/jdbc-store.md, "Outbox")

    /**
     * Writes the entries a handler sent into the outbox table, in the caller's open transaction on
     * {@code connection}, for {@link JdbcTransactionalHandler}: after {@link #confirmInTransaction} won. One multi-row
     * statement (several only past 1,000 rows or 8 MiB of messages); nothing is committed or rolled back here.
     *
     * @param connection a connection with auto-commit off, inside the caller's transaction
     * @param incomingKey the incoming message's key; every entry must carry it, each at a position of its own
     * @param entries the entries, in send order; none: nothing runs
     * @throws IllegalArgumentException if an entry breaks those rules, or its message-id or address holds a character
     *     no table can store (nothing is written)
     * @throws SQLException as the driver throws it; the caller then rolls back
     */
    void writeOutbox(Connection connection, String incomingKey, List<OutboxEntry> entries) throws SQLException {
        Objects.requireNonNull(connection, "connection must not be null");
        MessageIds.requireValid(incomingKey);
        if (connection.getAutoCommit()) {
            throw new IllegalStateException("writeOutbox needs a connection with auto-commit off");
        }
        sql(connection);
        outbox.write(connection, incomingKey, entries);
    }

    /**
     * Applies the queued {@linkplain #outboxDispatched marks} in the caller's open transaction on {@code connection},
     * just before its commit, for the transactional handlers: the marks ride a commit that happens anyway. No commit
     * here. If the transaction then does not commit (or its commit may have failed), the caller gives the returned
     * marks back with {@link #requeueOutboxMarks}.
     *
     * @param connection a connection with auto-commit off, inside the caller's transaction
     * @return the marks applied, empty if none was queued
     * @throws SQLException as the driver throws it; the marks are queued again and the caller rolls back
     */
    List<OutboxEntry> applyOutboxMarks(Connection connection) throws SQLException {
        if (outbox.queuedMarks() == 0) {
            return List.of();
        }
        sql(connection);
        return outbox.applyQueuedMarks(connection);
    }

    /** @param marks marks {@link #applyOutboxMarks} took whose transaction did not commit; queued again */
    void requeueOutboxMarks(List<OutboxEntry> marks) {
        outbox.requeue(marks);
    }

    /** @return how many {@linkplain #outboxDispatched marks} wait to be written (tests) */
    int queuedOutboxMarks() {
        return outbox.queuedMarks();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one primary-key range read of the outbox table.
     */
    @Override
    public List<OutboxEntry> pendingOutbox(String incomingKey) {
        MessageIds.requireValid(incomingKey);
        return outbox.pending(incomingKey);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: the entries are taken and held in one statement (PostgreSQL: {@code UPDATE … FROM (SELECT … FOR UPDATE
     * SKIP LOCKED) … RETURNING}; MariaDB and H2: a short transaction of the same two steps): rows another sweep is
     * taking at the same moment are skipped, and a row handed out is not handed out again by any sweep, of any
     * process, for the store's {@linkplain #leaseDuration() lease}, so that two processes sweeping at once dispatch
     * different rows. A row whose dispatch {@linkplain #outboxFailed failed} is held the same way: it is retried at
     * most once per lease. {@link #pendingOutbox(String)} ignores holds.
     *
     * @throws IllegalArgumentException if {@code minAge} is negative or {@code limit} is below 1
     */
    @Override
    public List<OutboxEntry> pendingOutbox(Duration minAge, int limit) {
        Objects.requireNonNull(minAge, "minAge must not be null");
        if (minAge.isNegative()) {
            throw new IllegalArgumentException("minAge must be >= 0, but was " + minAge);
        }
        if (minAge.compareTo(Duration.ofDays(365L * 100)) > 0) {
            throw new IllegalArgumentException("minAge must be at most 100 years, but was " + minAge);
        }
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
        }
        return outbox.sweep(minAge, limit);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: queued, and this returns without touching the database; the marks then ride the next commit that
     * happens anyway. A {@link JdbcTransactionalHandler}'s or {@link JdbcTransactionalBatchHandler}'s transaction
     * applies the queued marks (up to 1,000) in one statement just before its commit, and takes them back into the
     * queue if it does not commit. Marks no such transaction takes are written by a daemon thread of the store, one
     * statement and one commit for all of them, 1 s after the first of them was queued (so a mark waits about 2 s at
     * most), at once when 1,000 wait, and before every other outbox operation of this store
     * ({@link #pendingOutbox(String)}, {@link #pendingOutbox(Duration, int)}, {@link #outboxFailed},
     * {@link #outboxStatus()}, the purge), which therefore see every mark made before them. A process that stops
     * or crashes loses the marks still queued: their rows stay pending and the sweep sends them again with the same
     * message-ids, which the receivers absorb (keep the runtime's {@code outboxSweepMinAge}, default 1 min, well
     * above those 2 s, so that another live process's sweep does not resend rows merely waiting for their mark).
     * Writing queued marks that fails is logged and retried a second later (past 100,000 waiting marks the oldest
     * are dropped, which costs the same resend). With group commit {@linkplain Builder#groupCommit(boolean) off}
     * every call instead runs its own statement and commit before it returns, and throws
     * {@link StoreUnavailableException} if that fails. One statement per write, whatever the number of entries
     * (PostgreSQL: {@code unnest} of two arrays).
     */
    @Override
    public void outboxDispatched(List<OutboxEntry> entries) {
        outbox.dispatched(entries);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: counts the attempt, keeps the error (NUL characters and unpaired surrogates replaced, at most 1,000
     * characters) and holds the row from the sweeps for the store's lease. An entry that is dispatched or gone is left
     * alone.
     */
    @Override
    public void outboxFailed(OutboxEntry entry, String error) {
        outbox.failed(entry, error);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one statement over the pending rows only (on PostgreSQL through a partial index that holds nothing
     * else). An outbox table that does not exist reads as empty.
     */
    @Override
    public Status outboxStatus() {
        return outbox.status();
    }

    @Override
    public Duration leaseDuration() {
        return lease;
    }

    @Override
    public Duration retention() {
        return retention;
    }

    /** @return this instance's owner id, recorded on its claims */
    public UUID owner() {
        return owner;
    }

    /** @return the table name as configured ({@code [schema.]name}) */
    public String tableName() {
        return table.toString();
    }

    /** @return the outbox table's name ({@code [schema.]name}), as configured or derived from {@link #tableName()} */
    public String outboxTableName() {
        return outbox.table().toString();
    }

    /** @return whether concurrent claims, confirms and releases are group-committed (see {@link Builder#groupCommit}) */
    public boolean groupCommitEnabled() {
        return groupCommit != null;
    }

    /**
     * @return the most group-commit statements that run at once (the pool size the store read, or the configured or
     *     default value); meaningful when {@link #groupCommitEnabled()}
     */
    public int groupCommitMaxInFlight() {
        return groupCommitMaxInFlight;
    }

    @Override
    public String toString() {
        return "JdbcIdempotencyStore[table=" + table + ", outbox=" + outbox + ", dialect="
                + (dialectKind == null ? "unread" : dialectKind) + ", lease=" + lease + ", retention=" + retention
                + ", owner=" + owner + ", groupCommit=" + (groupCommit == null ? "off" : "on, maxInFlight " + groupCommitMaxInFlight)
                + "]";
    }

    // ---------------------------------------------------------------------------------------------------------
    // plumbing

    /** A claim this store could hold: a CLAIMED claim; anything else has no lease to act on. */
    private static boolean isOwnable(Claim claim) {
        Objects.requireNonNull(claim, "claim must not be null");
        MessageIds.requireValid(claim.messageId());
        return claim.claimed();
    }

    /** @return the dialect, read from a connection of the store's own the first time */
    private StoreDialect sql() {
        StoreDialect d = dialect;
        if (d != null) {
            return d;
        }
        return run("dialect", null, this::sql);
    }

    /** @return the dialect, read from {@code c}'s metadata the first time */
    private StoreDialect sql(Connection c) throws SQLException {
        StoreDialect d = dialect;
        if (d != null) {
            return d;
        }
        synchronized (this) {
            if (dialect == null) {
                JdbcDialect kind = JdbcDialect.ofProduct(c.getMetaData().getDatabaseProductName());
                dialectKind = kind;
                dialect = Dialects.create(kind.name(), table, lease, retention, mysqlStatements);
                LOG.debug("Idempotency table {}: {} dialect, read from the connection", table, kind);
            }
            return dialect;
        }
    }

    @FunctionalInterface
    private interface SqlCall<T> {
        T apply(Connection connection) throws SQLException;
    }

    /** What the group commit calls back: the single-id statements (for a batch of one) and the connection plumbing. */
    private final class GroupBackend implements JdbcGroupCommit.Backend {
        @Override
        public Claim acquireOne(String id, String fingerprint) {
            return acquireNow(id, fingerprint);
        }

        @Override
        public void confirmOne(String id) {
            confirmNow(id);
        }

        @Override
        public boolean confirmOne(Claim claim) {
            return confirmNow(claim);
        }

        @Override
        public boolean releaseOne(Claim claim) {
            return releaseNow(claim);
        }

        @Override
        public <T> T run(String operation, JdbcGroupCommit.SqlCall<T> call) {
            return JdbcIdempotencyStore.this.run(operation, null, call::apply);
        }
    }

    /** What the outbox calls back: the store's connection handling and dialect, with messages naming the outbox. */
    private final class OutboxBackend implements JdbcOutbox.Backend {
        @Override
        public <T> T run(String operation, String messageId, JdbcGroupCommit.SqlCall<T> call) {
            try {
                return JdbcIdempotencyStore.this.run(operation, messageId, call::apply);
            } catch (InvalidMessageIdException e) {
                throw e;
            } catch (StoreUnavailableException e) {
                String id = messageId == null ? "" : "'" + MessageIds.printable(messageId) + "'";
                String state = e.getCause() instanceof SQLException s ? " [SQLState " + s.getSQLState() + "]" : "";
                String cause = e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
                throw new StoreUnavailableException("Outbox table " + outbox + " (of idempotency store table " + table
                        + "): " + operation + "(" + id + ") failed" + state + ": " + cause,
                        e.getCause() != null ? e.getCause() : e);
            }
        }

        @Override
        public String product(Connection c) throws SQLException {
            sql(c);
            return dialectKind.name();
        }
    }

    /** Runs the array statements of this store's own batch calls. */
    private final class BatchRunner implements BatchStatements.Runner {
        @Override
        public <T> T run(String operation, JdbcGroupCommit.SqlCall<T> call) {
            return JdbcIdempotencyStore.this.run(operation, null, call::apply);
        }
    }

    /** A single-id statement run on a given connection. */
    @FunctionalInterface
    private interface ProbeCall<T> {
        void apply(Connection connection, T subject) throws SQLException;
    }

    private static List<String> ids(List<Claim> claims) {
        List<String> ids = new ArrayList<>(claims.size());
        for (Claim claim : claims) {
            ids.add(claim.messageId());
        }
        return ids;
    }

    /** @return a probe of an id that runs {@code call} on the first claim of that id */
    private static ProbeCall<String> byId(List<Claim> claims, ProbeCall<Claim> call) {
        return (c, id) -> {
            for (Claim claim : claims) {
                if (claim.messageId().equals(id)) {
                    call.apply(c, claim);
                    return;
                }
            }
        };
    }

    /**
     * A batch statement of one caller failed and wrote nothing. If PostgreSQL refused its data (SQLState class 22),
     * finds the id to blame: runs the single-id statement of each distinct id, in id order, each in a transaction of
     * its own that is rolled back (nothing is written, and locks are held only for that statement), until one fails
     * with a data error.
     *
     * @return an InvalidMessageIdException naming that id; otherwise {@code failure} itself
     */
    private RuntimeException refusedIdOr(StoreUnavailableException failure, String operation, List<String> ids,
                                         ProbeCall<String> single) {
        if (!batches.isDataError(failure)) {
            return failure;
        }
        for (String id : new TreeSet<>(ids)) {
            try (Connection c = dataSource.getConnection()) {
                boolean autoCommit = c.getAutoCommit();
                requireNoCallerTransaction(c, autoCommit);
                c.setAutoCommit(false);
                try {
                    single.apply(c, id);
                } catch (SQLException e) {
                    if (batches.isDataError(e)) {
                        InvalidMessageIdException refused = refused(operation, id, e);
                        refused.addSuppressed(failure);
                        return refused;
                    }
                    failure.addSuppressed(e);
                    return failure;
                } finally {
                    c.rollback();
                    c.setAutoCommit(autoCommit);
                }
            } catch (SQLException e) {
                failure.addSuppressed(e);
                return failure;
            }
        }
        return failure;
    }


    /**
     * Runs one autocommit statement on a connection of the store's own: takes it, switches auto-commit on if needed
     * (and back afterwards), and turns every SQLException into StoreUnavailableException.
     */
    private <T> T run(String operation, String messageId, SqlCall<T> call) {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            if (autoCommit) {
                return call.apply(c);
            }
            requireNoCallerTransaction(c, false);
            c.setAutoCommit(true);
            try {
                return call.apply(c);
            } finally {
                c.setAutoCommit(false);
            }
        } catch (SQLException e) {
            if (messageId != null && dialect != null && dialect.isRefusedKey(e)) {
                throw refused(operation, messageId, e);
            }
            throw unavailable(operation, messageId, e);
        }
    }

    /** PostgreSQL refused the data of a statement about one id: a fact of that id, not an outage. */
    private InvalidMessageIdException refused(String operation, String messageId, SQLException e) {
        return new InvalidMessageIdException(messageId, "Idempotency store table " + table + " refused the id '"
                + MessageIds.printable(messageId) + "' in " + operation + " [SQLState " + e.getSQLState() + "]: "
                + e.getMessage() + "; nothing was written", e);
    }

    private StoreUnavailableException unavailable(String operation, String messageId, SQLException e) {
        String id = messageId == null ? "" : "'" + MessageIds.printable(messageId) + "'";
        return new StoreUnavailableException("Idempotency store table " + table + ": " + operation + "(" + id
                + ") failed [SQLState " + e.getSQLState() + "]: " + e.getMessage(), e);
    }

    /**
     * A connection with auto-commit off may carry a caller's open transaction (a DataSource that hands out the
     * caller's connection). Switching auto-commit on would commit that transaction, so refuse instead. Only the
     * PostgreSQL driver tells; with other drivers the check is skipped.
     */
    private void requireNoCallerTransaction(Connection c, boolean autoCommit) throws SQLException {
        if (autoCommit) {
            return;
        }
        String state = PgTransactionState.of(c);
        if (state != null && !state.equals("IDLE")) {
            throw new IllegalStateException("The DataSource handed the idempotency store (table " + table
                    + ") a connection inside an open transaction (state " + state + "). The store runs its own "
                    + "autocommit statements and must not join a caller's transaction: give it a DataSource (pool) "
                    + "of its own, not a transaction-bound proxy.");
        }
    }

    /** Reads pgjdbc's transaction state reflectively, so that the driver stays the application's choice. */
    private static final class PgTransactionState {

        private static final Class<?> BASE_CONNECTION;
        private static final Method GET_TRANSACTION_STATE;

        static {
            Class<?> cls = null;
            Method m = null;
            try {
                cls = Class.forName("org.postgresql.core.BaseConnection");
                m = cls.getMethod("getTransactionState");
            } catch (ReflectiveOperationException | LinkageError e) {
                cls = null;
                m = null;
            }
            BASE_CONNECTION = cls;
            GET_TRANSACTION_STATE = m;
        }

        private PgTransactionState() {
        }

        /** @return IDLE, OPEN or FAILED, or null when the connection is not a pgjdbc one */
        static String of(Connection c) throws SQLException {
            if (BASE_CONNECTION == null || !c.isWrapperFor(BASE_CONNECTION)) {
                return null;
            }
            try {
                return String.valueOf(GET_TRANSACTION_STATE.invoke(c.unwrap(BASE_CONNECTION)));
            } catch (ReflectiveOperationException | RuntimeException e) {
                LOG.debug("Cannot read the transaction state of {}", c, e);
                return null;
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------

    /**
     * Configures a {@link JdbcIdempotencyStore}. Every setting has a default; values are checked as they arrive.
     * Not thread-safe; the store it builds is.
     */
    public static final class Builder {

        private final DataSource dataSource;
        private TableName table = TableName.parse(DEFAULT_TABLE_NAME);
        private TableName outboxTable; // null: derived from table
        private Duration lease = DEFAULT_LEASE;
        private Duration retention = DEFAULT_RETENTION;
        private UUID owner;
        private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;
        private Duration purgePause = DEFAULT_PURGE_PAUSE;
        private int groupCommitMaxBatch = DEFAULT_GROUP_COMMIT_MAX_BATCH; // 0 = off
        private Duration outboxMarkFlushDelay = JdbcOutbox.FLUSH_DELAY;
        private int groupCommitMaxInFlight; // 0 = the pool size, or DEFAULT_GROUP_COMMIT_MAX_IN_FLIGHT
        private boolean arraySqlForSingletons;
        private boolean mysqlStatements;
        private JdbcDialect dialect;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource must not be null");
        }

        /**
         * @param tableName {@code name} or {@code schema.name}: lowercase letters, digits and underscores, not
         *     starting with a digit, the name at most 48 characters; default {@value #DEFAULT_TABLE_NAME}
         * @return this builder
         * @throws IllegalArgumentException for anything else (quotes, semicolons, spaces, upper case, …)
         */
        public Builder tableName(String tableName) {
            this.table = TableName.parse(tableName);
            return this;
        }

        /**
         * @param outboxTableName the {@linkplain OutboxStore outbox} table, with the same rules as
         *     {@link #tableName(String)}, or null (the default) for a name derived from the store's table: in its
         *     schema, its name with a trailing {@code idempotency} replaced by {@code outbox}
         *     ({@code acemq_idempotency} → {@value #DEFAULT_OUTBOX_TABLE_NAME}), else with {@code _outbox} appended
         *     (shortened, with a hash of the store table's name, where that would pass 48 characters). Must differ
         *     from the store's table.
         * @return this builder
         * @throws IllegalArgumentException for a name the rules refuse
         */
        public Builder outboxTableName(String outboxTableName) {
            this.outboxTable = outboxTableName == null ? null : TableName.parse(outboxTableName);
            return this;
        }

        /**
         * @param lease how long a claim lasts unless renewed; at least 1 ms, millisecond precision; default 30 s
         * @return this builder
         */
        public Builder lease(Duration lease) {
            this.lease = requireMillis("lease", lease);
            return this;
        }

        /**
         * @param retention how long a confirmed (or released) id is remembered; at least 1 ms; default 24 h. Must
         *     outlive the longest time a duplicate can still arrive.
         * @return this builder
         */
        public Builder retention(Duration retention) {
            this.retention = requireMillis("retention", retention);
            return this;
        }

        /**
         * @param owner this instance's owner id, or null (the default) for a random one. Two live instances must
         *     never share an owner id, or each could release the other's claims.
         * @return this builder
         */
        public Builder owner(UUID owner) {
            this.owner = owner;
            return this;
        }

        /**
         * @param purgeBatchSize rows deleted per statement by {@link JdbcIdempotencyStore#purgeExpired()}; at
         *     least 1; default {@value #DEFAULT_PURGE_BATCH_SIZE}
         * @return this builder
         */
        public Builder purgeBatchSize(int purgeBatchSize) {
            if (purgeBatchSize < 1) {
                throw new IllegalArgumentException("purgeBatchSize must be >= 1, but was " + purgeBatchSize);
            }
            this.purgeBatchSize = purgeBatchSize;
            return this;
        }

        /**
         * @param purgePause pause between purge batches; zero or more; default 20 ms
         * @return this builder
         */
        public Builder purgePause(Duration purgePause) {
            Objects.requireNonNull(purgePause, "purgePause must not be null");
            if (purgePause.isNegative()) {
                throw new IllegalArgumentException("purgePause must be >= 0, but was " + purgePause);
            }
            this.purgePause = purgePause;
            return this;
        }

        /**
         * How long queued outbox marks wait for a transaction to ride before the store's flusher writes them; tests
         * only (not public: the default suits every sweep setting the runtime accepts).
         *
         * @param delay positive
         * @return this builder
         */
        Builder outboxMarkFlushDelay(Duration delay) {
            if (delay == null || delay.isNegative() || delay.isZero()) {
                throw new IllegalArgumentException("outboxMarkFlushDelay must be positive, but was " + delay);
            }
            this.outboxMarkFlushDelay = delay;
            return this;
        }

        /**
         * Switches group commit on (the default) or off.
         *
         * <p>On: concurrent {@code acquire}/{@code tryClaim}/{@code claim}, {@code confirm(String)},
         * {@code confirm(Claim)} and {@code release(Claim)} calls are coalesced into one statement (one transaction,
         * one WAL flush) per batch; each caller still gets exactly its own answer. It decides by itself from the load:
         * a caller that finds fewer than {@code maxInFlight} statements running (by default the pool's size) runs its
         * own single-id statement at once, on its own thread, exactly as with group commit off, so a lone caller and
         * a handful of callers see no difference at all; only callers that would otherwise wait for a pooled
         * connection wait for the next batch of their kind instead, and share its statement and commit. Measured in
         * {@code docs/jdbc-store.md}, "Group commit". Off: every call runs its own statement (for measurements).
         *
         * @param enabled whether to group-commit
         * @return this builder
         */
        public Builder groupCommit(boolean enabled) {
            if (!enabled) {
                this.groupCommitMaxBatch = 0;
            } else if (groupCommitMaxBatch == 0) {
                this.groupCommitMaxBatch = DEFAULT_GROUP_COMMIT_MAX_BATCH;
                this.groupCommitMaxInFlight = 0;
            }
            return this;
        }

        /**
         * Switches group commit on with the given limits (see {@link #groupCommit(boolean)}).
         *
         * @param maxBatch the most calls coalesced into one statement; at least 1; default
         *     {@value #DEFAULT_GROUP_COMMIT_MAX_BATCH}
         * @param maxInFlight the most batch statements executing at once, over all four operations; each holds one
         *     pooled connection while it runs; at least 1; default: the DataSource's pool size when the store can read
         *     it, else {@value #DEFAULT_GROUP_COMMIT_MAX_IN_FLIGHT}. Below the number of concurrent callers, callers
         *     wait for batches even when the pool has connections to spare, which costs throughput unless the
         *     batches get large (dozens of callers per slot).
         * @return this builder
         */
        public Builder groupCommit(int maxBatch, int maxInFlight) {
            if (maxBatch < 1) {
                throw new IllegalArgumentException("groupCommit maxBatch must be >= 1, but was " + maxBatch);
            }
            if (maxInFlight < 1) {
                throw new IllegalArgumentException("groupCommit maxInFlight must be >= 1, but was " + maxInFlight);
            }
            this.groupCommitMaxBatch = maxBatch;
            this.groupCommitMaxInFlight = maxInFlight;
            return this;
        }

        /**
         * @param dialect the database product, or null (the default) to read it from the first connection's
         *     {@linkplain java.sql.DatabaseMetaData#getDatabaseProductName() metadata}
         * @return this builder
         */
        public Builder dialect(JdbcDialect dialect) {
            this.dialect = dialect;
            return this;
        }

        /** Tests only: a group-commit batch of one runs the array statement too, not the single-id one. */
        Builder arraySqlForSingletons(boolean value) {
            this.arraySqlForSingletons = value;
            return this;
        }

        /**
         * Tests only: on MariaDB, run the statements the dialect runs on MySQL 8 (claims without {@code RETURNING},
         * read back in their own transaction), so that they are tested on the server there is.
         */
        Builder mysqlStatements(boolean value) {
            this.mysqlStatements = value;
            return this;
        }

        /**
         * @return a new store; touches no database (see {@link JdbcIdempotencyStore#createSchema()})
         * @throws IllegalArgumentException if the outbox table is the store's table
         */
        public JdbcIdempotencyStore build() {
            if (outboxTable != null && outboxTable.equals(table)) {
                throw new IllegalArgumentException("outboxTableName must differ from tableName, but both were '"
                        + table + "'");
            }
            return new JdbcIdempotencyStore(this);
        }

        private static Duration requireMillis(String name, Duration value) {
            Objects.requireNonNull(value, name + " must not be null");
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(name + " must be > 0, but was " + value);
            }
            if (value.toMillis() < 1) {
                throw new IllegalArgumentException(name + " must be at least 1 ms, but was " + value);
            }
            if (value.compareTo(Duration.ofDays(365L * 100)) > 0) {
                throw new IllegalArgumentException(name + " must be at most 100 years, but was " + value);
            }
            return value;
        }
    }
}

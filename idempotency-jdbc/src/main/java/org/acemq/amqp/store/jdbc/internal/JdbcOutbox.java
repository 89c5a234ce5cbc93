package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactional outbox of {@code JdbcIdempotencyStore}: what each {@link OutboxStore} operation runs, on which
 * connection, and how often it commits. The SQL is the {@link OutboxDialect}'s, chosen from the store's product.
 *
 * <ul>
 *   <li><b>Write</b> ({@link #write}): in the handler's transaction, after its confirm; one multi-row statement for
 *       all of a handler's sends (split only past {@value #MAX_ROWS_PER_STATEMENT} rows or
 *       {@value #MAX_BYTES_PER_STATEMENT} bytes), no commit of its own.</li>
 *   <li><b>Marks</b> ({@link #dispatched}): queued, not written by the caller (unless group commit is off: then
 *       each call runs its own statement and commit). The queued marks ride the next transaction that commits
 *       anyway: a transactional handler's ({@link #applyQueuedMarks}, one more statement before its commit, put back
 *       in the queue if that transaction does not commit). Marks no such transaction takes are written by a flusher
 *       thread of the outbox, one statement and one commit for all of them, {@value #FLUSH_DELAY_MILLIS} ms after
 *       the first of them was queued (so a mark waits at most about twice that), at once when
 *       {@value #FLUSH_AT_ENTRIES} wait, and before every other outbox operation of this store (reads, sweep,
 *       failure records, purge), which therefore see every mark made before them. A crash loses the queued marks:
 *       their rows stay pending and the sweep dispatches them again with the same message-ids, which the receiver
 *       absorbs. Marks are not on any message's critical path, so nobody waits for them.</li>
 *   <li><b>Sweep</b> ({@link #sweep}): one statement (PostgreSQL) or one short transaction that takes the oldest
 *       pending rows no other sweep holds and holds them for the store's lease, so that sweeps of several processes
 *       at once hand out different rows.</li>
 *   <li><b>A missing outbox table</b> is an outbox that was never used (a schema made before the outbox existed): the
 *       reads find nothing and the purge skips it, with one log line; the write fails, naming the table.</li>
 * </ul>
 */
public final class JdbcOutbox {

    /** The most rows one insert statement carries. */
    public static final int MAX_ROWS_PER_STATEMENT = 1_000;
    /** The most message bytes one insert statement carries, unless one message alone is larger. */
    public static final int MAX_BYTES_PER_STATEMENT = 8 * 1024 * 1024;
    /** The longest error text kept per row, in {@code char}s. */
    public static final int MAX_ERROR_LENGTH = 1_000;

    /** How long queued marks wait for a transaction to ride before the flusher writes them, in milliseconds. */
    public static final long FLUSH_DELAY_MILLIS = 1_000;
    /** {@link #FLUSH_DELAY_MILLIS}, the default. */
    public static final Duration FLUSH_DELAY = Duration.ofMillis(FLUSH_DELAY_MILLIS);
    /** How many queued marks make the flusher write them at once. */
    public static final int FLUSH_AT_ENTRIES = 1_000;
    /** The most queued marks one transactional handler's transaction takes. */
    static final int MAX_MARKS_PER_RIDE = 1_000;
    /** The most marks kept queued while writing them fails; past it the oldest are dropped (their rows resend). */
    static final int MAX_QUEUED_MARKS = 100_000;

    private static final Logger LOG = LoggerFactory.getLogger(JdbcOutbox.class);

    /** What the outbox needs from its store. */
    public interface Backend {
        /**
         * Runs a call on an auto-commit connection of the store's own.
         *
         * @param operation for messages
         * @param messageId the one id the call is about, or null
         * @param call the statements
         * @param <T> the result type
         * @return the call's result
         * @throws StoreUnavailableException for an SQLException, its cause; an InvalidMessageIdException instead if
         *     the database refused {@code messageId}
         */
        <T> T run(String operation, String messageId, JdbcGroupCommit.SqlCall<T> call);

        /**
         * @param c a connection of the store's database
         * @return the store's product, a {@code JdbcDialect} constant's name, read from {@code c} if not known yet
         * @throws SQLException if reading it fails
         */
        String product(Connection c) throws SQLException;
    }

    private final TableName table;
    private final Duration hold;
    private final Duration retention;
    private final Backend backend;
    private final boolean queueMarks; // false: group commit off, every mark call writes and commits its own
    private final ConcurrentLinkedQueue<OutboxEntry> queued = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queuedCount = new AtomicInteger();
    private final AtomicBoolean flushScheduled = new AtomicBoolean();
    private final ScheduledThreadPoolExecutor flusher; // null when marks are not queued
    /** Held while queued marks are written by {@link #flushQueuedMarks}. */
    private final Object flushLock = new Object();
    private final long flushDelayNanos;
    private final AtomicBoolean missingTableLogged = new AtomicBoolean();
    private volatile OutboxDialect dialect;

    /**
     * @param table the outbox table
     * @param hold how long a swept or failed row is held from other sweeps (the store's lease)
     * @param retention how long dispatched rows are kept (the store's retention)
     * @param maxBatch the store's group-commit batch; 0 (group commit off) writes every mark call at once, else marks
     *     are queued
     * @param flushDelay how long queued marks wait for a transaction to ride before the flusher writes them
     * @param backend the store
     */
    public JdbcOutbox(TableName table, Duration hold, Duration retention, int maxBatch, Duration flushDelay,
            Backend backend) {
        this.flushDelayNanos = flushDelay.toNanos();
        this.table = Objects.requireNonNull(table, "table");
        this.hold = hold;
        this.retention = retention;
        this.backend = backend;
        this.queueMarks = maxBatch != 0;
        if (queueMarks) {
            String name = "acemq-outbox-marks-" + table;
            flusher = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, name);
                t.setDaemon(true);
                return t;
            });
            flusher.setKeepAliveTime(10, TimeUnit.SECONDS);
            flusher.allowCoreThreadTimeOut(true); // no thread while nothing is queued
            flusher.setRemoveOnCancelPolicy(true);
        } else {
            flusher = null;
        }
    }

    /**
     * The outbox table next to a store table: its name with a trailing {@code idempotency} replaced by {@code outbox},
     * else with {@code _outbox} appended, in the same schema; a name that would be longer than
     * {@link TableName#MAX_NAME_LENGTH} is shortened and made unique with a hash of the store table's name.
     *
     * @param store the store's table
     * @return the default outbox table
     */
    public static TableName defaultFor(TableName store) {
        String name = store.name();
        String derived = name.endsWith("idempotency")
                ? name.substring(0, name.length() - "idempotency".length()) + "outbox" : name + "_outbox";
        if (derived.length() > TableName.MAX_NAME_LENGTH) {
            String hash = String.format("%08x", store.toString().hashCode());
            derived = name.substring(0, TableName.MAX_NAME_LENGTH - "_outbox".length() - hash.length() - 1) + "_"
                    + hash + "_outbox";
        }
        return new TableName(store.schema(), derived);
    }

    /** @return the outbox table */
    public TableName table() {
        return table;
    }

    // ---------------------------------------------------------------------------------------------- schema

    /**
     * @param product a {@code JdbcDialect} name
     * @return the DDL of the outbox table on that product
     */
    public List<String> ddl(String product) {
        return dialect(product).ddl();
    }

    /**
     * Creates the outbox table and its indexes if they do not exist.
     *
     * @param c an auto-commit connection of the store's own
     * @throws SQLException as the driver throws it
     */
    public void createSchema(Connection c) throws SQLException {
        dialect(c).createSchema(c);
    }

    // ---------------------------------------------------------------------------------------------- write

    /**
     * Writes a handler's entries in the caller's transaction. Nothing is committed or rolled back here.
     *
     * @param c the caller's connection, auto-commit off
     * @param incomingKey the incoming message's key
     * @param entries its entries; each of that key, distinct positions, storable ids and addresses
     * @throws IllegalArgumentException if an entry breaks those rules (nothing is written)
     * @throws SQLException as the driver throws it; the caller rolls back
     */
    public void write(Connection c, String incomingKey, List<OutboxEntry> entries) throws SQLException {
        Set<Integer> positions = new HashSet<>();
        for (OutboxEntry e : entries) {
            Objects.requireNonNull(e, "outbox entry must not be null");
            if (!e.incomingKey().equals(incomingKey)) {
                throw new IllegalArgumentException("outbox entry " + e + " belongs to another incoming message than '"
                        + MessageIds.printable(incomingKey) + "'");
            }
            if (!positions.add(e.position())) {
                throw new IllegalArgumentException("two outbox entries of '" + MessageIds.printable(incomingKey)
                        + "' have position " + e.position());
            }
            requireStorable("message-id", e.messageId(), e);
            requireStorable("address", e.address(), e);
        }
        if (entries.isEmpty()) {
            return;
        }
        OutboxDialect d = dialect(c);
        try {
            int from = 0;
            while (from < entries.size()) {
                int to = from;
                long bytes = 0;
                while (to < entries.size() && to - from < MAX_ROWS_PER_STATEMENT
                        && (to == from || bytes + entries.get(to).message().length <= MAX_BYTES_PER_STATEMENT)) {
                    bytes += entries.get(to).message().length;
                    to++;
                }
                d.insert(c, entries.subList(from, to));
                from = to;
            }
        } catch (SQLException e) {
            if (d.isUndefinedTable(e)) {
                throw new SQLException("The outbox table " + table + " does not exist: create it with the store's "
                        + "createSchema() or the shipped migrations (docs/jdbc-store.md, \"Outbox\") before handlers "
                        + "send messages through the envelope. " + e.getMessage(), e.getSQLState(), e.getErrorCode(), e);
            }
            throw e;
        }
    }

    private static void requireStorable(String what, String value, OutboxEntry e) {
        if (MessageIds.firstUnstorable(value) >= 0) {
            throw new IllegalArgumentException("outbox entry " + MessageIds.printable(e.toString()) + ": its " + what
                    + " holds a NUL character or an unpaired surrogate, which the outbox table cannot store");
        }
    }

    // ---------------------------------------------------------------------------------------------- reads

    /**
     * @param incomingKey a valid key
     * @return its pending entries, in position order
     */
    public List<OutboxEntry> pending(String incomingKey) {
        flushQueuedMarks();
        return backend.run("pendingOutbox", incomingKey, c -> {
            OutboxDialect d = dialect(c);
            try {
                return d.pending(c, incomingKey);
            } catch (SQLException e) {
                return ifMissing(d, e, List.of());
            }
        });
    }

    /**
     * @param minAge at least this old
     * @param limit at least 1
     * @return up to {@code limit} pending entries no other sweep holds, oldest first; now held for the lease
     */
    public List<OutboxEntry> sweep(Duration minAge, int limit) {
        flushQueuedMarks();
        return backend.run("pendingOutbox", null, c -> {
            OutboxDialect d = dialect(c);
            for (int attempt = 0;; attempt++) {
                try {
                    return d.sweep(c, minAge, limit);
                } catch (SQLException e) {
                    if (attempt < BatchStatements.RETRIES && d.isRetryable(e)) {
                        continue;
                    }
                    return ifMissing(d, e, List.of());
                }
            }
        });
    }

    /** @return the outbox's status, in one statement */
    public OutboxStore.Status status() {
        flushQueuedMarks();
        return backend.run("outboxStatus", null, c -> {
            OutboxDialect d = dialect(c);
            try {
                return d.status(c);
            } catch (SQLException e) {
                return ifMissing(d, e, new OutboxStore.Status(0, null, 0));
            }
        });
    }

    // ---------------------------------------------------------------------------------------------- writes

    /**
     * Marks entries dispatched: queued for the next transaction that commits anyway, or the flusher; written at once
     * when group commit is off. Returns without waiting for a database when queued.
     *
     * @param entries the entries
     */
    public void dispatched(List<OutboxEntry> entries) {
        Objects.requireNonNull(entries, "entries must not be null");
        for (OutboxEntry e : entries) {
            MessageIds.requireValid(Objects.requireNonNull(e, "outbox entry must not be null").incomingKey());
        }
        if (entries.isEmpty()) {
            return;
        }
        if (!queueMarks) {
            mark(entries, 1);
            return;
        }
        enqueue(entries);
    }

    /** @return how many marks wait in the queue */
    public int queuedMarks() {
        return queuedCount.get();
    }

    private void enqueue(List<OutboxEntry> entries) {
        queued.addAll(entries);
        int now = queuedCount.addAndGet(entries.size());
        if (now >= FLUSH_AT_ENTRIES) {
            flusher.execute(this::flushFromFlusher);
        } else if (flushScheduled.compareAndSet(false, true)) {
            flusher.schedule(this::flushFromFlusher, flushDelayNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** @return up to {@code max} queued marks, taken out of the queue */
    private List<OutboxEntry> take(int max) {
        List<OutboxEntry> taken = new ArrayList<>(Math.min(max, Math.max(16, queuedCount.get())));
        OutboxEntry e;
        while (taken.size() < max && (e = queued.poll()) != null) {
            taken.add(e);
        }
        queuedCount.addAndGet(-taken.size());
        return taken;
    }

    /**
     * Applies queued marks in the caller's transaction, just before its commit: one statement (more only past the
     * dialect's limit), no commit. The caller gives them back with {@link #requeue} if its transaction does not
     * commit.
     *
     * @param c the caller's connection, auto-commit off, in the transaction about to commit
     * @return the marks applied (empty if none was queued); the caller's to give back if it rolls back
     * @throws SQLException as the driver throws it; the marks are back in the queue and the caller rolls back
     */
    public List<OutboxEntry> applyQueuedMarks(Connection c) throws SQLException {
        if (!queueMarks || queuedCount.get() == 0) {
            return List.of();
        }
        List<OutboxEntry> taken = take(MAX_MARKS_PER_RIDE);
        if (taken.isEmpty()) {
            return taken;
        }
        try {
            Pairs p = pairs(taken);
            OutboxDialect d = dialect(c);
            int max = d.maxPairsPerStatement();
            for (int from = 0; from < p.keys.length; from += max) {
                int to = Math.min(p.keys.length, from + max);
                d.dispatched(c, Arrays.copyOfRange(p.keys, from, to), Arrays.copyOfRange(p.positions, from, to));
            }
        } catch (SQLException | RuntimeException e) {
            requeue(taken);
            throw e;
        }
        return taken;
    }

    /**
     * Puts marks taken by {@link #applyQueuedMarks} back in the queue (their transaction did not commit, or may not
     * have).
     *
     * @param marks the marks
     */
    public void requeue(List<OutboxEntry> marks) {
        if (!marks.isEmpty()) {
            enqueue(marks);
        }
    }

    /**
     * Writes every queued mark now, on a connection of the store's own, in one statement and commit (more only past
     * the dialect's limit). A no-op when nothing is queued.
     *
     * @throws StoreUnavailableException if writing them fails; they are back in the queue
     */
    public void flushQueuedMarks() {
        if (!queueMarks) {
            return;
        }
        // one flush at a time: a caller that finds the flusher writing waits for it, so that what it reads next
        // (a status, a sweep) sees the marks made before its call
        synchronized (flushLock) {
            flushQueuedMarksNow();
        }
    }

    private void flushQueuedMarksNow() {
        if (queuedCount.get() == 0) {
            return;
        }
        List<OutboxEntry> taken = take(Integer.MAX_VALUE);
        if (taken.isEmpty()) {
            return;
        }
        try {
            mark(taken, 0);
        } catch (RuntimeException e) {
            int kept = queuedCount.get();
            if (kept + taken.size() > MAX_QUEUED_MARKS) {
                LOG.warn("Outbox table {}: dropped {} dispatched marks that could not be written ({} more wait); "
                        + "their rows stay pending and the sweep sends them again with the same message-ids",
                        table, taken.size(), kept);
            } else {
                requeue(taken);
            }
            throw e;
        }
    }

    private void flushFromFlusher() {
        flushScheduled.set(false);
        try {
            flushQueuedMarks();
        } catch (RuntimeException e) {
            LOG.warn("Outbox table {}: writing {} queued dispatched marks failed; retried in {} ms: {}", table,
                    queuedCount.get(), flushDelayNanos / 1_000_000, e.toString());
        }
        if (queuedCount.get() > 0 && flushScheduled.compareAndSet(false, true)) {
            flusher.schedule(this::flushFromFlusher, flushDelayNanos, TimeUnit.NANOSECONDS);
        }
    }

    private record Pairs(String[] keys, int[] positions) { }

    /** @return the distinct pairs, in key order (the order every mark statement locks rows in) */
    private static Pairs pairs(List<OutboxEntry> entries) {
        TreeMap<String, Set<Integer>> pairs = new TreeMap<>();
        for (OutboxEntry e : entries) {
            pairs.computeIfAbsent(e.incomingKey(), k -> new TreeSet<>()).add(e.position());
        }
        List<String> keyList = new ArrayList<>(entries.size());
        List<Integer> positionList = new ArrayList<>(entries.size());
        pairs.forEach((key, positions) -> positions.forEach(p -> {
            keyList.add(key);
            positionList.add(p);
        }));
        return new Pairs(keyList.toArray(String[]::new), positionList.stream().mapToInt(Integer::intValue).toArray());
    }

    /**
     * One statement for the distinct pairs, in key order; several in one transaction past the statement's limit.
     *
     * @param calls 1 for one caller's marks, 0 for queued marks
     */
    private void mark(List<OutboxEntry> entries, int calls) {
        Pairs p = pairs(entries);
        String[] keys = p.keys;
        int[] positions = p.positions;
        String operation = "outboxDispatched(" + keys.length + (calls == 0 ? " queued" : "") + " entries)";
        backend.run(operation, null, c -> {
            OutboxDialect d = dialect(c);
            for (int attempt = 0;; attempt++) {
                try {
                    markOn(c, d, keys, positions);
                    return null;
                } catch (SQLException e) {
                    if (attempt < BatchStatements.RETRIES && d.isRetryable(e)) {
                        continue;
                    }
                    return ifMissing(d, e, null);
                }
            }
        });
    }

    private static void markOn(Connection c, OutboxDialect d, String[] keys, int[] positions) throws SQLException {
        int max = d.maxPairsPerStatement();
        if (keys.length <= max) {
            d.dispatched(c, keys, positions);
            return;
        }
        Transactions.run(c, tx -> {
            for (int from = 0; from < keys.length; from += max) {
                int to = Math.min(keys.length, from + max);
                d.dispatched(tx, Arrays.copyOfRange(keys, from, to), Arrays.copyOfRange(positions, from, to));
            }
            return null;
        });
    }

    /**
     * @param entry the entry
     * @param error why, any text; kept sanitised and bounded
     */
    public void failed(OutboxEntry entry, String error) {
        Objects.requireNonNull(entry, "entry must not be null");
        MessageIds.requireValid(entry.incomingKey());
        String kept = boundedError(error);
        flushQueuedMarks();
        backend.run("outboxFailed", entry.incomingKey(), c -> {
            OutboxDialect d = dialect(c);
            try {
                d.failed(c, entry.incomingKey(), entry.position(), kept);
                return null;
            } catch (SQLException e) {
                return ifMissing(d, e, null);
            }
        });
    }

    /**
     * @param error any text, or null
     * @return the text without NUL characters and unpaired surrogates (each replaced by U+FFFD), at most
     *     {@link #MAX_ERROR_LENGTH} characters, never splitting a surrogate pair; "(no message)" for null or blank
     */
    static String boundedError(String error) {
        if (error == null || error.isBlank()) {
            return "(no message)";
        }
        StringBuilder kept = new StringBuilder(Math.min(error.length(), MAX_ERROR_LENGTH));
        String rest = error;
        while (!rest.isEmpty()) {
            int bad = MessageIds.firstUnstorable(rest);
            kept.append(bad < 0 ? rest : rest.substring(0, bad) + '\uFFFD');
            rest = bad < 0 ? "" : rest.substring(bad + 1);
        }
        if (kept.length() > MAX_ERROR_LENGTH) {
            int end = MAX_ERROR_LENGTH;
            if (Character.isHighSurrogate(kept.charAt(end - 1))) {
                end--;
            }
            kept.setLength(end);
        }
        return kept.toString();
    }

    /**
     * Deletes up to {@code batchSize} dispatched rows older than the retention, in one statement.
     *
     * @param batchSize at least 1
     * @return how many were deleted (0 when there is no outbox table)
     */
    public int purgeBatch(int batchSize) {
        flushQueuedMarks();
        return backend.run("purgeExpired(outbox)", null, c -> {
            OutboxDialect d = dialect(c);
            try {
                return d.purgeBatch(c, batchSize);
            } catch (SQLException e) {
                return ifMissing(d, e, 0);
            }
        });
    }

    // ---------------------------------------------------------------------------------------------- plumbing

    /** @return {@code empty} if the outbox table does not exist (logged once), else rethrows {@code e} */
    private <T> T ifMissing(OutboxDialect d, SQLException e, T empty) throws SQLException {
        if (!d.isUndefinedTable(e)) {
            throw e;
        }
        if (missingTableLogged.compareAndSet(false, true)) {
            LOG.info("The outbox table {} does not exist; the store reads it as empty until it is created (the "
                    + "store's createSchema(), or the shipped migrations). Only handlers that send messages through "
                    + "the envelope need it.", table);
        }
        return empty;
    }

    private OutboxDialect dialect(Connection c) throws SQLException {
        OutboxDialect d = dialect;
        return d != null ? d : dialect(backend.product(c));
    }

    private OutboxDialect dialect(String product) {
        OutboxDialect d = dialect;
        if (d != null) {
            return d;
        }
        synchronized (this) {
            if (dialect == null) {
                dialect = switch (product) {
                    case "POSTGRESQL" -> new PostgresOutbox(table, hold, retention);
                    case "MARIADB" -> LockingOutbox.mariaDb(table, hold, retention);
                    case "H2" -> LockingOutbox.h2(table, hold, retention);
                    default -> throw new IllegalArgumentException("Unknown dialect " + product);
                };
            }
            return dialect;
        }
    }

    @Override
    public String toString() {
        return table.toString();
    }
}

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
import java.util.concurrent.atomic.AtomicBoolean;
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
 *   <li><b>Marks</b> ({@link #dispatched}): group-committed. Concurrent callers' marks are coalesced into one
 *       statement and one commit per batch by a {@link GroupCommit} of their own that runs at most one mark
 *       statement at a time: a lone caller runs its statement at once; callers arriving while one runs wait for it
 *       and share the next. Marks are not on any message's critical path (a lost mark costs one resend that the
 *       receiver absorbs), so one statement at a time trades nothing for the fewest commits.</li>
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
    private final GroupCommit.Lane<MarkRequest> marks; // null: group commit off
    private final AtomicBoolean missingTableLogged = new AtomicBoolean();
    private volatile OutboxDialect dialect;

    /**
     * @param table the outbox table
     * @param hold how long a swept or failed row is held from other sweeps (the store's lease)
     * @param retention how long dispatched rows are kept (the store's retention)
     * @param maxBatch the most mark calls coalesced into one statement; 0 turns group commit off
     * @param backend the store
     */
    public JdbcOutbox(TableName table, Duration hold, Duration retention, int maxBatch, Backend backend) {
        this.table = Objects.requireNonNull(table, "table");
        this.hold = hold;
        this.retention = retention;
        this.backend = backend;
        this.marks = maxBatch == 0 ? null : new GroupCommit(maxBatch, 1).lane("outboxDispatched", this::markBatch);
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
     * Marks entries dispatched; group-committed unless group commit is off.
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
        if (marks != null) {
            marks.submit(new MarkRequest(entries));
        } else {
            mark(entries, 1);
        }
    }

    private void markBatch(List<MarkRequest> batch) {
        List<OutboxEntry> all = new ArrayList<>();
        for (MarkRequest r : batch) {
            all.addAll(r.entries);
        }
        try {
            mark(all, batch.size());
        } catch (StoreUnavailableException e) {
            for (MarkRequest r : batch) {
                r.fail(batch.size() == 1 ? e : new StoreUnavailableException(e.getMessage() + " (in a group-committed "
                        + "batch of " + batch.size() + " calls)", e.getCause() != null ? e.getCause() : e));
            }
            return;
        }
        for (MarkRequest r : batch) {
            r.complete(null);
        }
    }

    /** One statement for the distinct pairs, in key order; several in one transaction past the statement's limit. */
    private void mark(List<OutboxEntry> entries, int calls) {
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
        String[] keys = keyList.toArray(String[]::new);
        int[] positions = positionList.stream().mapToInt(Integer::intValue).toArray();
        String operation = "outboxDispatched(" + keys.length + " entries"
                + (calls > 1 ? " of " + calls + " calls" : "") + ")";
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

    /** One caller's marks. */
    private final class MarkRequest extends GroupCommit.Request<Void> {
        final List<OutboxEntry> entries;

        MarkRequest(List<OutboxEntry> entries) {
            this.entries = List.copyOf(entries);
        }

        @Override
        protected StoreUnavailableException interrupted(InterruptedException cause) {
            return new StoreUnavailableException("Outbox table " + table + ": outboxDispatched(" + entries.size()
                    + " entries) was interrupted while waiting for its group-commit batch; nothing was written", cause);
        }
    }
}

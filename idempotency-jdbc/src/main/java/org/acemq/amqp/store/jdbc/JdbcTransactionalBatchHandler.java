package org.acemq.amqp.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore.TransactionalConfirm;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link BatchHandler} whose database work for a whole batch and the store's confirms of all its messages commit in
 * <b>one database transaction</b> (PostgreSQL, MariaDB / MySQL or H2, as the store's dialect): exactly-once effects
 * for batch handlers whose effects are rows in the same database as the store's table, typically one bulk insert per
 * batch. The batch counterpart of {@link JdbcTransactionalHandler}.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(storePool).build();
 * BatchHandler handler = JdbcTransactionalBatchHandler.of(store, appPool, (batch, connection) -> {
 *     try (PreparedStatement ps = connection.prepareStatement("INSERT INTO readings (id, body) VALUES (?, ?)")) {
 *         for (Envelope e : batch) {
 *             ps.setString(1, e.id());
 *             ps.setString(2, e.body(String.class));
 *             ps.addBatch();
 *         }
 *         ps.executeBatch();
 *     }
 * });
 * AmqpConsumer.builder().store(store)                                   // the SAME store instance
 *         .subscribe(Subscription.batchBuilder("readings", handler).batchSize(100).build())...
 * }</pre>
 *
 * <p>For each batch: take a connection from {@code dataSource}, switch auto-commit off, then
 * <ol>
 *   <li><b>lock</b> the store rows of the batch's messages, in id order (one statement on PostgreSQL), and leave out
 *       the messages another consumer has confirmed meanwhile (after a lease takeover): their work is done;</li>
 *   <li>run the <b>work</b> for the other messages, in their order, on the same connection;</li>
 *   <li><b>confirm</b> those whose work succeeded (one statement on PostgreSQL, one per message on MariaDB / MySQL and
 *       H2), and commit.</li>
 * </ol>
 * If the work throws {@link BatchItemsFailedException} (its indices count in the list the work got), the messages it
 * names are not confirmed, the others' work and confirms commit, and the exception goes on to the runtime with the
 * indices of the whole batch: the named messages fail as their causes say, the others are accepted. Anything else
 * the work throws rolls the whole transaction back and is rethrown: every message of the batch failed with it.
 *
 * <h2>What is guaranteed</h2>
 * <ul>
 *   <li><b>A crash before the commit leaves neither</b> the effects nor the confirms: the batch is redelivered and
 *       its work runs again. After the commit, the redelivered messages are duplicates, filtered before the
 *       handler.</li>
 *   <li><b>Two owners never both commit effects for one message.</b> The rows stay locked from step 1 to the commit:
 *       a consumer that took a message over (its lease lapsed here) and confirms it in its own transaction waits,
 *       then finds it confirmed and rolls its work back; one that committed first is seen in step 1 and its message is
 *       left out here. Such a message is accepted here without running (its work is done, by the other owner).</li>
 *   <li><b>A lapsed lease</b> (the batch took longer than the lease, nobody took it over) does not lose the work: the
 *       confirm is recorded anyway and logged.</li>
 *   <li><b>Messages the work sends through a message's envelope</b> ({@link Envelope#send}, {@link Envelope#reply})
 *       are written to the store's outbox table in the same transaction, after the confirms, for the messages whose
 *       work committed, and dispatched by the runtime after the commit, as {@link JdbcTransactionalHandler} does for
 *       one message: exactly once together with the batch's rows, as an idempotent receiver sees them. The sends of a
 *       message named in a {@link BatchItemsFailedException}, or of a batch rolled back, are never sent. To send,
 *       the outbox table must exist ({@link JdbcIdempotencyStore#createSchema()} or the shipped migrations).</li>
 * </ul>
 * The requirements of {@link JdbcTransactionalHandler} apply: the same database as the store's table, the store
 * instance the consumer uses, and work that does not commit, roll back, close the connection or switch auto-commit on.
 *
 * <p><b>Cost:</b> two statements more per batch on PostgreSQL (lock, confirm), one more when outbox marks are queued
 * in the store (they ride this commit, as with {@link JdbcTransactionalHandler}), and the rows of a batch stay locked
 * while its work runs; the runtime's confirms after the handler find the messages confirmed by these very claims and
 * write nothing. Concurrent batches lock in id order, so they queue behind each other instead of deadlocking.
 *
 * <p><b>Threading:</b> thread-safe if the work is; each call uses its own connection.
 */
public final class JdbcTransactionalBatchHandler implements BatchHandler {

    private static final Logger LOG = LoggerFactory.getLogger(JdbcTransactionalBatchHandler.class);

    /** The application's database work for a batch, run inside the transaction that also records the confirms. */
    @FunctionalInterface
    public interface TransactionalBatchWork {

        /**
         * Does the work for the messages on {@code connection}, without committing.
         *
         * @param batch the messages whose work is not done yet, in the order they arrived; never empty, unmodifiable
         * @param connection a connection with auto-commit off, inside the transaction; do not commit, roll back or
         *     close it
         * @throws BatchItemsFailedException naming the messages (indices in {@code batch}) whose work failed; their
         *     work must not have been written (or must have been undone, for example to a savepoint): the rest
         *     commits
         * @throws Exception to fail every message: the transaction is rolled back and the exception is rethrown to
         *     the runtime (a {@link org.acemq.amqp.api.PermanentMessageException} rejects them)
         */
        void handle(List<Envelope> batch, Connection connection) throws Exception;
    }

    private final JdbcIdempotencyStore store;
    private final DataSource dataSource;
    private final TransactionalBatchWork work;

    private JdbcTransactionalBatchHandler(JdbcIdempotencyStore store, DataSource dataSource,
                                          TransactionalBatchWork work) {
        this.store = store;
        this.dataSource = dataSource;
        this.work = work;
    }

    /**
     * @param store the store the consumer uses (the same instance)
     * @param dataSource where the work's connections come from; the same database as the store's table
     * @param work the database work for a batch
     * @return the handler
     */
    public static JdbcTransactionalBatchHandler of(JdbcIdempotencyStore store, DataSource dataSource,
            TransactionalBatchWork work) {
        return new JdbcTransactionalBatchHandler(Objects.requireNonNull(store, "store must not be null"),
                Objects.requireNonNull(dataSource, "dataSource must not be null"),
                Objects.requireNonNull(work, "work must not be null"));
    }

    @Override
    public void handle(List<Envelope> batch) throws Exception {
        Map<String, Claim> claims = claims(batch);
        BatchItemsFailedException failed;
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            if (autoCommit) {
                connection.setAutoCommit(false);
            }
            try {
                failed = run(batch, claims, connection);
            } catch (Exception | Error e) {
                rollbackQuietly(connection, e);
                throw e;
            } finally {
                if (autoCommit) {
                    try {
                        connection.setAutoCommit(true);
                    } catch (SQLException e) {
                        LOG.debug("Could not restore auto-commit on a connection after a batch", e);
                    }
                }
            }
        }
        if (failed != null) {
            throw failed; // the rest of the batch committed
        }
    }

    /**
     * Lock, work, confirm, commit, in the caller's transaction; anything thrown is rolled back by the caller.
     *
     * @return null if every message's work succeeded; else, once the rest committed, the work's failures with the
     *     indices of the whole batch
     */
    private BatchItemsFailedException run(List<Envelope> batch, Map<String, Claim> claims, Connection connection)
            throws Exception {
        // 1. lock the batch's rows; what another owner confirmed meanwhile is done
        Set<String> done = store.lockInTransaction(connection, new ArrayList<>(claims.keySet()));
        List<Envelope> todo = new ArrayList<>(batch.size());
        List<Integer> todoIndex = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            if (!done.contains(batch.get(i).id())) {
                todo.add(batch.get(i));
                todoIndex.add(i);
            }
        }
        // 2. the work, for the rest
        Map<Integer, Throwable> failures = Map.of();
        if (!todo.isEmpty()) {
            try {
                work.handle(Collections.unmodifiableList(todo), connection);
            } catch (BatchItemsFailedException e) {
                failures = e.failures();
                for (Integer i : failures.keySet()) {
                    if (i >= todo.size()) {
                        throw e; // names a message the work did not get: every message failed (the runtime's rule)
                    }
                }
            }
            if (connection.getAutoCommit()) {
                throw new IllegalStateException("the transactional work for a batch of " + batch.size()
                        + " switched auto-commit on; its effects may already be committed");
            }
        }
        // 3. confirm what succeeded, and commit
        List<Envelope> succeeded = new ArrayList<>(todo.size());
        List<Claim> confirms = new ArrayList<>(todo.size());
        for (int i = 0; i < todo.size(); i++) {
            if (!failures.containsKey(i)) {
                succeeded.add(todo.get(i));
                confirms.add(claims.get(todo.get(i).id()));
            }
        }
        Map<String, TransactionalConfirm> results = store.confirmAllInTransaction(connection, confirms);
        for (Map.Entry<String, TransactionalConfirm> r : results.entrySet()) {
            if (r.getValue() == TransactionalConfirm.ALREADY_CONFIRMED) {
                // its row did not exist when the batch locked (purged, never claimed) and another owner confirmed it
                // since: the work may not commit; the batch comes back, and this message is then a duplicate
                throw new IllegalStateException(r.getKey() + " was confirmed by another consumer while this batch "
                        + "worked on it (its row was not there to lock); the batch's work was rolled back");
            }
        }
        // 4. what each message's work sent, to the outbox in this transaction (after the confirms won, as
        //    JdbcTransactionalHandler does: an owner that lost the race writes none)
        List<OutboxCapture> captures = new ArrayList<>(succeeded.size());
        for (Envelope e : succeeded) {
            Optional<OutboxCapture> capture = OutboxCapture.of(e);
            if (capture.isPresent()) {
                captures.add(capture.get());
                List<OutboxEntry> sent = capture.get().outboxEntries();
                if (!sent.isEmpty()) {
                    store.writeOutbox(connection, e.id(), sent);
                }
            }
        }
        // 5. the outbox marks queued since, riding this commit; back in the queue if it does not happen
        List<OutboxEntry> marks = store.applyOutboxMarks(connection);
        try {
            connection.commit();
        } catch (SQLException | RuntimeException e) {
            store.requeueOutboxMarks(marks);
            throw e;
        }
        captures.forEach(OutboxCapture::outboxStored);
        for (Envelope e : batch) {
            if (done.contains(e.id())) {
                OutboxCapture.of(e).ifPresent(OutboxCapture::outboxDiscarded); // did not run: sends nothing
            }
        }
        for (Envelope e : succeeded) {
            if (results.get(e.id()) == TransactionalConfirm.CONFIRMED_LEASE_LOST) {
                LOG.info("{} (attempt {}) committed with its batch after its lease had lapsed; no other consumer had "
                        + "confirmed it, so this commit is the only one", e.id(), claims.get(e.id()).attempt());
            }
        }
        if (!done.isEmpty()) {
            LOG.info("{} message(s) of a batch of {} were confirmed by another consumer while this one worked on them; "
                    + "their work was left out", done.size(), batch.size());
        }
        if (failures.isEmpty()) {
            return null;
        }
        Map<Integer, Throwable> inBatch = new LinkedHashMap<>();
        failures.forEach((i, cause) -> inBatch.put(todoIndex.get(i), cause));
        return new BatchItemsFailedException(inBatch);
    }

    /** @return a claim per message, by id, as the runtime made them (owner: the store's), in batch order */
    private static Map<String, Claim> claims(List<Envelope> batch) {
        Map<String, Claim> claims = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        for (Envelope e : batch) {
            if (!seen.add(e.id())) {
                throw new IllegalArgumentException("a batch names " + e.id() + " twice; the runtime never does");
            }
            claims.put(e.id(), new Claim(e.id(), ClaimResult.CLAIMED, Math.max(1, e.attempt())));
        }
        return claims;
    }

    private static void rollbackQuietly(Connection connection, Throwable failure) {
        try {
            connection.rollback();
        } catch (SQLException | RuntimeException e) {
            failure.addSuppressed(e);
            LOG.debug("Rollback of a batch failed (the transaction ends with the connection anyway)", e);
        }
    }

    @Override
    public String toString() {
        return "JdbcTransactionalBatchHandler[table=" + store.tableName() + ", work=" + work + "]";
    }
}

package org.acemq.amqp.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link MessageHandler} whose database work and the store's confirm commit in <b>one database transaction</b>
 * (PostgreSQL, MariaDB / MySQL or H2, as the store's dialect):
 * exactly-once effects for handlers whose effects are rows in the same database as the store's table.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(storePool).build();
 * MessageHandler handler = JdbcTransactionalHandler.of(store, appPool, (envelope, connection) -> {
 *     try (PreparedStatement ps = connection.prepareStatement("INSERT INTO orders (id, body) VALUES (?, ?)")) {
 *         ps.setString(1, envelope.id());
 *         ps.setString(2, envelope.body(String.class));
 *         ps.executeUpdate();
 *     }
 * });
 * AmqpConsumer.builder().store(store).subscribe("orders", handler)...   // the SAME store instance
 * }</pre>
 *
 * <p>For each message: take a connection from {@code dataSource}, switch auto-commit off, run the work on it, record
 * the confirm of {@link Envelope#id()} on the same connection, write the messages the work sent through the envelope
 * ({@link Envelope#send}, {@link Envelope#reply}) to the store's outbox table on the same connection, commit. If
 * anything throws, roll back and rethrow: the runtime then releases the claim and settles the delivery as for any
 * failed handler, and sends nothing.
 *
 * <h2>What is guaranteed</h2>
 * <ul>
 *   <li><b>A crash before the commit leaves neither</b> the effects nor the confirm: the message is redelivered
 *       and the work runs again. A redelivery after the commit is a duplicate.</li>
 *   <li><b>Two owners never both commit effects.</b> After a lease takeover (the first owner was paused) two
 *       consumers may run the work for one id at the same time. The confirm at the end of each transaction locks
 *       the store row and records completion only if the id is not confirmed yet; the second transaction waits for
 *       the first and, if the first committed, rolls its own work back and returns normally (the delivery is
 *       accepted: the work is done, by the other owner). This holds at any isolation level; above READ COMMITTED
 *       the second transaction may instead fail with a serialization error, which rolls it back too and the
 *       redelivery is then a duplicate.</li>
 *   <li><b>An uncertain commit is safe</b>: if the commit fails because the connection broke, the handler throws;
 *       the redelivery finds the id either confirmed (the commit happened) or not (it did not).</li>
 *   <li><b>Messages sent through the envelope commit with the effects</b> (a <em>transactional outbox</em>): they are
 *       rows of the outbox table written in this transaction, so they exist exactly when the effects and the confirm
 *       do. After the commit the runtime dispatches them and marks them dispatched; a crash in between leaves them
 *       pending, and the runtime's sweep, or the next copy of the incoming message, dispatches them. A dispatch may
 *       therefore repeat, but always with the same message-ids (derived from the incoming key and the send's
 *       position), which an idempotent receiver absorbs: exactly once as that receiver sees it. The outbox rows are
 *       written after the confirm won, so an owner that lost the race above writes none; the handler's sends of a
 *       rolled-back attempt are never written.</li>
 * </ul>
 *
 * <h2>Requirements</h2>
 * <ul>
 *   <li>{@code dataSource} must reach the <em>same database</em> as the store's table.</li>
 *   <li>{@code store} must be the instance given to the consumer (the confirm is recorded under its owner id, which
 *       is how the runtime's own confirm after the handler recognises it and stays quiet).</li>
 *   <li>The work must not commit, roll back, close the connection or switch auto-commit on.</li>
 *   <li>Only database work on {@code connection} and messages sent through the envelope are exactly-once; anything
 *       else the work does (HTTP calls, messages sent on a sender of its own) is still at-least-once.</li>
 *   <li>To send, the outbox table must exist ({@link JdbcIdempotencyStore#createSchema()} or the shipped
 *       migrations); a work that sends nothing does not touch it.</li>
 * </ul>
 *
 * <p><b>Cost:</b> one extra round trip inside the transaction (the confirm), plus one (a single multi-row insert)
 * when the work sent messages, plus one when outbox marks are queued in the store (the marks of messages
 * dispatched earlier ride this commit instead of committing on their own; see
 * {@link JdbcIdempotencyStore#outboxDispatched}), and the transaction holds the store row locked from the confirm to
 * the commit. The
 * runtime's confirm after the handler still runs; it finds the id already confirmed by this very claim and writes
 * nothing.
 *
 * <p><b>Threading:</b> thread-safe if the work is; each call uses its own connection.
 */
public final class JdbcTransactionalHandler implements MessageHandler {

    private static final Logger LOG = LoggerFactory.getLogger(JdbcTransactionalHandler.class);

    /** The application's database work for one message, run inside the transaction that also records the confirm. */
    @FunctionalInterface
    public interface TransactionalWork {

        /**
         * Does the work for one message on {@code connection}, without committing.
         *
         * @param envelope the message
         * @param connection a connection with auto-commit off, inside the transaction; do not commit, roll back or
         *     close it
         * @throws Exception to fail the message: the transaction is rolled back and the exception is rethrown to the
         *     runtime (a {@link org.acemq.amqp.api.PermanentMessageException} rejects the message)
         */
        void handle(Envelope envelope, Connection connection) throws Exception;
    }

    private final JdbcIdempotencyStore store;
    private final DataSource dataSource;
    private final TransactionalWork work;

    private JdbcTransactionalHandler(JdbcIdempotencyStore store, DataSource dataSource, TransactionalWork work) {
        this.store = store;
        this.dataSource = dataSource;
        this.work = work;
    }

    /**
     * @param store the store the consumer uses (the same instance)
     * @param dataSource where the work's connections come from; the same database as the store's table
     * @param work the database work for one message
     * @return the handler
     */
    public static JdbcTransactionalHandler of(JdbcIdempotencyStore store, DataSource dataSource,
            TransactionalWork work) {
        return new JdbcTransactionalHandler(Objects.requireNonNull(store, "store must not be null"),
                Objects.requireNonNull(dataSource, "dataSource must not be null"),
                Objects.requireNonNull(work, "work must not be null"));
    }

    @Override
    public void handle(Envelope envelope) throws Exception {
        Claim claim = new Claim(envelope.id(), ClaimResult.CLAIMED, Math.max(1, envelope.attempt()));
        try (Connection connection = dataSource.getConnection()) {
            boolean autoCommit = connection.getAutoCommit();
            if (autoCommit) {
                connection.setAutoCommit(false);
            }
            List<OutboxEntry> marks = List.of(); // queued outbox marks this transaction took, until it committed
            try {
                work.handle(envelope, connection);
                if (connection.getAutoCommit()) {
                    throw new IllegalStateException("the transactional work for " + envelope.id()
                            + " switched auto-commit on; its effects may already be committed");
                }
                Optional<OutboxCapture> capture = OutboxCapture.of(envelope);
                List<OutboxEntry> sent = capture.isPresent() ? capture.get().outboxEntries() : List.of();
                // the confirm first: it serialises owners on the store row, so only the winner writes outbox rows
                JdbcIdempotencyStore.TransactionalConfirm result = store.confirmInTransaction(connection, claim);
                if (result == JdbcIdempotencyStore.TransactionalConfirm.ALREADY_CONFIRMED) {
                    connection.rollback();
                    capture.ifPresent(OutboxCapture::outboxDiscarded);
                    LOG.info("{} was confirmed by another consumer while this one (attempt {}) worked on it; this "
                            + "attempt's work was rolled back{}", envelope.id(), claim.attempt(),
                            sent.isEmpty() ? "" : " and its " + sent.size() + " sent message(s) discarded");
                    return;
                }
                if (!sent.isEmpty()) {
                    store.writeOutbox(connection, envelope.id(), sent);
                }
                marks = store.applyOutboxMarks(connection); // queued outbox marks ride this commit
                connection.commit();
                marks = List.of();
                capture.ifPresent(OutboxCapture::outboxStored);
                if (result == JdbcIdempotencyStore.TransactionalConfirm.CONFIRMED_LEASE_LOST) {
                    LOG.info("{} (attempt {}) committed after its lease had lapsed; no other consumer had confirmed "
                            + "it, so this commit is the only one", envelope.id(), claim.attempt());
                }
            } catch (Exception | Error e) {
                store.requeueOutboxMarks(marks);
                rollbackQuietly(connection, envelope, e);
                throw e;
            } finally {
                if (autoCommit) {
                    try {
                        connection.setAutoCommit(true);
                    } catch (SQLException e) {
                        LOG.debug("Could not restore auto-commit on a connection for {}", envelope.id(), e);
                    }
                }
            }
        }
    }

    private static void rollbackQuietly(Connection connection, Envelope envelope, Throwable failure) {
        try {
            connection.rollback();
        } catch (SQLException | RuntimeException e) {
            failure.addSuppressed(e);
            LOG.debug("Rollback for {} failed (the transaction ends with the connection anyway)", envelope.id(), e);
        }
    }

    @Override
    public String toString() {
        return "JdbcTransactionalHandler[table=" + store.tableName() + ", work=" + work + "]";
    }
}

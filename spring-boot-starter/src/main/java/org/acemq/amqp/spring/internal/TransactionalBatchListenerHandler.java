package org.acemq.amqp.spring.internal;

import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.spring.internal.SpringTransactionParts.CheckedFailure;
import org.acemq.amqp.spring.internal.SpringTransactionParts.CommitGate;
import org.acemq.amqp.spring.internal.SpringTransactionParts.TransactionBoundDataSource;
import org.acemq.amqp.spring.internal.SpringTransactionParts.TransactionEnd;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalBatchHandler;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A batch listener with {@code databaseTransaction}: the method runs for the whole batch inside one Spring transaction,
 * and the store's confirms of the batch's messages (and the outbox rows of what they sent) are the last statements of
 * that same transaction, so that the batch's database work, its confirms and its sends commit together.
 *
 * <p>The guarantee and the SQL are {@link JdbcTransactionalBatchHandler}'s, run on the connection Spring's transaction
 * manager bound to the thread, as {@link TransactionalListenerHandler} does for one message: the connection is
 * offered through a view whose {@code commit()} does nothing (Spring commits when the callback returns) and whose
 * {@code rollback()} marks the transaction rollback-only. So:
 * <ul>
 *   <li>method returns: the batch's rows are locked, the work done, every message confirmed and what it sent written
 *       to the outbox, and Spring commits them together; only then is the runtime told the outbox rows exist;</li>
 *   <li>messages another consumer confirmed meanwhile (after a lease takeover) are left out of the method's list:
 *       their work is done;</li>
 *   <li>the method throws {@link BatchItemsFailedException}: the messages it names are neither confirmed nor is what
 *       they sent written; the rest commits, and then the exception reaches the runtime (the named messages fail as
 *       their causes say, the others are accepted). The work of the named messages must not be in the transaction
 *       (not written, or undone to a savepoint);</li>
 *   <li>the method throws anything else, or the commit fails: rolled back; the exception reaches the runtime and
 *       every message of the batch failed with it; nothing is sent;</li>
 *   <li>the method returns but the transaction was rolled back anyway (rollback-only): nothing was committed, so the
 *       whole batch failed: an {@link IllegalStateException} saying so reaches the runtime, and nothing is sent.</li>
 * </ul>
 */
final class TransactionalBatchListenerHandler implements BatchHandler {

    private final BatchHandler listener;
    private final JdbcIdempotencyStore store;
    private final DataSource dataSource;
    private final TransactionTemplate transactions;
    private final String description;

    /**
     * @param listener the batch listener method's invoker
     * @param store the consumer's store (the same instance)
     * @param dataSource the DataSource the transaction manager binds connections for; the store's database
     * @param transactionManager the transaction manager
     * @param description the listener, for messages
     */
    TransactionalBatchListenerHandler(BatchHandler listener, JdbcIdempotencyStore store, DataSource dataSource,
            PlatformTransactionManager transactionManager, String description) {
        this.listener = listener;
        this.store = store;
        this.dataSource = dataSource;
        this.transactions = SpringTransactionParts.ownTransactions(transactionManager);
        this.description = description;
    }

    @Override
    public void handle(List<Envelope> batch) throws Exception {
        List<Envelope> gated = new ArrayList<>(batch.size());
        List<CommitGate> gates = new ArrayList<>(batch.size());
        for (Envelope e : batch) {
            if (e instanceof OutboxCapture capture) {
                CommitGate gate = new CommitGate(e, capture);
                gates.add(gate);
                gated.add(gate);
            } else {
                gated.add(e);
            }
        }
        TransactionEnd end = new TransactionEnd();
        BatchItemsFailedException[] partial = new BatchItemsFailedException[1];
        try {
            transactions.executeWithoutResult(status -> {
                end.begin(status);
                JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(store,
                        new TransactionBoundDataSource(dataSource, status, () -> { }, description),
                        (todo, connection) -> {
                            listener.handle(todo);
                            status.flush(); // ORM work reaches the connection before the confirm statements
                        });
                try {
                    handler.handle(gated);
                } catch (BatchItemsFailedException e) {
                    partial[0] = e; // the rest of the batch is confirmed in this transaction: commit it
                } catch (RuntimeException | Error e) {
                    throw e;
                } catch (Exception e) {
                    throw new CheckedFailure(e);
                }
            });
        } catch (CheckedFailure e) {
            throw e.failure;
        }
        if (!end.committed()) {
            gates.forEach(g -> g.delegate.outboxDiscarded());
            throw new IllegalStateException("transactional batch listener " + description + ": the transaction of a "
                    + "batch of " + batch.size() + " was rolled back although the method returned (it, or a "
                    + "@Transactional method it called, marked it rollback-only); its work, its confirms and the "
                    + "messages it sent were discarded, so the batch goes back");
        }
        gates.forEach(CommitGate::committed);
        if (partial[0] != null) {
            throw partial[0];
        }
    }

    @Override
    public String toString() {
        return "transactional batch " + listener + " on " + store.tableName();
    }
}

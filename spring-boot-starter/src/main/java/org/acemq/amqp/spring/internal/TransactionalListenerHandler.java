package org.acemq.amqp.spring.internal;

import javax.sql.DataSource;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.spring.internal.SpringTransactionParts.CheckedFailure;
import org.acemq.amqp.spring.internal.SpringTransactionParts.CommitGate;
import org.acemq.amqp.spring.internal.SpringTransactionParts.TransactionBoundDataSource;
import org.acemq.amqp.spring.internal.SpringTransactionParts.TransactionEnd;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A transactional listener: the method runs inside a Spring transaction, and the store's confirm is the last
 * statement of that same transaction, so that the method's database work and the confirm commit together.
 *
 * <p>The guarantee (and the SQL) is {@link JdbcTransactionalHandler}'s: this class does not re-implement it, it runs
 * it on the connection Spring's transaction manager bound to the thread. To that handler the transaction's
 * connection is offered through a view whose {@code commit()} does nothing (Spring commits when the callback
 * returns, after its own before-commit work such as a JPA flush), whose {@code rollback()} marks the Spring
 * transaction rollback-only, and whose {@code close()} leaves the connection to the transaction. So:
 * <ul>
 *   <li>method returns, confirm recorded: the messages the method sent (its return value, an {@code AcemqSender}, the
 *       envelope) are written to the store's outbox by {@code JdbcTransactionalHandler}, on the same connection, and
 *       Spring commits work, confirm and outbox rows together; only then is the runtime told the rows exist
 *       ({@link OutboxCapture#outboxStored()}), so that it dispatches them from the outbox;</li>
 *   <li>another owner confirmed first: {@code JdbcTransactionalHandler} "rolls back", i.e. the transaction is
 *       rolled back, and the method's work is undone; its sends are discarded; the delivery is accepted as done;</li>
 *   <li>the method throws: rolled back; the exception reaches the runtime unchanged, and nothing is sent;</li>
 *   <li>the commit fails: the exception reaches the runtime, which releases the claim; nothing is sent;</li>
 *   <li>the method returns but the transaction was rolled back anyway (the method, or a {@code @Transactional} method
 *       it called and whose exception it caught, marked it rollback-only): neither work, confirm nor outbox rows
 *       exist, so the message failed: an {@link IllegalStateException} saying so reaches the runtime (which retries
 *       it as any failure), and nothing is sent.</li>
 * </ul>
 */
final class TransactionalListenerHandler implements MessageHandler {

    private final MessageHandler listener;
    private final JdbcIdempotencyStore store;
    private final DataSource dataSource;
    private final TransactionTemplate transactions;
    private final String description;

    /**
     * @param listener the listener method's invoker
     * @param store the consumer's store (the same instance)
     * @param dataSource the DataSource the transaction manager binds connections for; the store's database
     * @param transactionManager the transaction manager
     * @param description the listener, for messages
     */
    TransactionalListenerHandler(MessageHandler listener, JdbcIdempotencyStore store, DataSource dataSource,
            PlatformTransactionManager transactionManager, String description) {
        this.listener = listener;
        this.store = store;
        this.dataSource = dataSource;
        this.transactions = SpringTransactionParts.ownTransactions(transactionManager);
        this.description = description;
    }

    @Override
    public void handle(Envelope envelope) throws Exception {
        Attempt attempt = new Attempt(envelope);
        try {
            transactions.executeWithoutResult(status -> {
                attempt.begin(status);
                JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(store,
                        new TransactionBoundDataSource(dataSource, status, attempt::rolledBackForAnotherOwner,
                                description), (e, connection) -> {
                            listener.handle(e);
                            status.flush(); // ORM work reaches the connection before the confirm statement
                        });
                try {
                    handler.handle(attempt.envelope);
                } catch (RuntimeException | Error e) {
                    throw e;
                } catch (Exception e) {
                    throw new CheckedFailure(e);
                }
            });
        } catch (CheckedFailure e) {
            throw e.failure;
        }
        attempt.ended(description);
    }

    @Override
    public String toString() {
        return "transactional " + listener + " on " + store.tableName();
    }

    /**
     * One run of the method in its transaction: what became of the transaction (a synchronization registered in it),
     * whether {@code JdbcTransactionalHandler} rolled it back because another owner had confirmed the message, and the
     * envelope it is given, which holds back {@link OutboxCapture#outboxStored()} until Spring committed.
     */
    private static final class Attempt {
        final Envelope envelope;
        private final CommitGate gate;
        private final TransactionEnd end = new TransactionEnd();
        private boolean anotherOwner;

        Attempt(Envelope envelope) {
            if (envelope instanceof OutboxCapture capture) {
                this.gate = new CommitGate(envelope, capture);
                this.envelope = gate;
            } else {
                this.gate = null;
                this.envelope = envelope;
            }
        }

        /** The transaction began. */
        void begin(TransactionStatus transaction) {
            end.begin(transaction);
        }

        /** {@code JdbcTransactionalHandler} rolled the transaction back: the message's confirm lost to another. */
        void rolledBackForAnotherOwner() {
            anotherOwner = true;
        }

        /**
         * The transaction ended and the method returned: tells the runtime the outbox rows exist (committed), or
         * fails the message when Spring rolled back a transaction the method meant to commit.
         */
        void ended(String description) {
            if (end.committed()) {
                if (gate != null) {
                    gate.committed();
                }
                return;
            }
            if (anotherOwner) {
                return; // JdbcTransactionalHandler discarded the sends; the message is done (by the other owner)
            }
            if (gate != null) {
                gate.delegate.outboxDiscarded();
            }
            throw new IllegalStateException("transactional listener " + description + ": the transaction of "
                    + envelope.id() + " was rolled back although the method returned (it, or a @Transactional method "
                    + "it called, marked it rollback-only); its work, its confirm and the messages it sent were "
                    + "discarded, so the message goes back");
        }
    }
}

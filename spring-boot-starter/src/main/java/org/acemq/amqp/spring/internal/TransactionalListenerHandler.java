package org.acemq.amqp.spring.internal;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
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
        this.transactions = new TransactionTemplate(transactionManager);
        this.transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        this.description = description;
    }

    @Override
    public void handle(Envelope envelope) throws Exception {
        Attempt attempt = new Attempt(envelope);
        try {
            transactions.executeWithoutResult(status -> {
                attempt.begin(status);
                JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(store,
                        new TransactionBoundDataSource(status, attempt), (e, connection) -> {
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
    private static final class Attempt implements TransactionSynchronization {
        final Envelope envelope;
        private final CommitGate gate;
        private TransactionStatus status;
        private int completion = -1;
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

        /**
         * The transaction began: follow its end through a synchronization; a transaction manager told never to
         * synchronize offers none, and then the end is read from the completed status (rolled back although the
         * callback returned: rollback-only).
         */
        void begin(TransactionStatus transaction) {
            this.status = transaction;
            if (TransactionSynchronizationManager.isSynchronizationActive()) {
                TransactionSynchronizationManager.registerSynchronization(this);
            }
        }

        /** {@code JdbcTransactionalHandler} rolled the transaction back: the message's confirm lost to another. */
        void rolledBackForAnotherOwner() {
            anotherOwner = true;
        }

        @Override
        public void afterCompletion(int status) {
            completion = status;
        }

        /**
         * The transaction ended and the method returned: tells the runtime the outbox rows exist (committed), or
         * fails the message when Spring rolled back a transaction the method meant to commit.
         */
        void ended(String description) {
            boolean committed = completion == -1
                    ? status != null && status.isCompleted() && !status.isRollbackOnly()
                    : completion == STATUS_COMMITTED;
            if (committed) {
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

    /**
     * The envelope as {@code JdbcTransactionalHandler} sees it: everything the runtime's, except that the handler's
     * {@code outboxStored()} (called once its no-op commit returned) is held until Spring's real commit.
     */
    private static final class CommitGate implements Envelope, OutboxCapture {
        final Envelope envelope;
        final OutboxCapture delegate;
        private boolean stored;

        CommitGate(Envelope envelope, OutboxCapture delegate) {
            this.envelope = envelope;
            this.delegate = delegate;
        }

        @Override
        public List<OutboxEntry> outboxEntries() {
            return delegate.outboxEntries();
        }

        @Override
        public void outboxStored() {
            stored = true; // told to the runtime once Spring committed (committed())
        }

        @Override
        public void outboxDiscarded() {
            stored = false;
            delegate.outboxDiscarded();
        }

        void committed() {
            if (stored) {
                delegate.outboxStored();
            }
        }

        @Override
        public String id() {
            return envelope.id();
        }

        @Override
        public Object messageId() {
            return envelope.messageId();
        }

        @Override
        public String address() {
            return envelope.address();
        }

        @Override
        public Object body() {
            return envelope.body();
        }

        @Override
        public <T> T body(Class<T> type) {
            return envelope.body(type);
        }

        @Override
        public Object correlationId() {
            return envelope.correlationId();
        }

        @Override
        public String subject() {
            return envelope.subject();
        }

        @Override
        public String contentType() {
            return envelope.contentType();
        }

        @Override
        public String replyTo() {
            return envelope.replyTo();
        }

        @Override
        public String groupId() {
            return envelope.groupId();
        }

        @Override
        public Instant creationTime() {
            return envelope.creationTime();
        }

        @Override
        public Map<String, Object> applicationProperties() {
            return envelope.applicationProperties();
        }

        @Override
        public Map<String, Object> annotations() {
            return envelope.annotations();
        }

        @Override
        public long deliveryCount() {
            return envelope.deliveryCount();
        }

        @Override
        public boolean firstAcquirer() {
            return envelope.firstAcquirer();
        }

        @Override
        public int attempt() {
            return envelope.attempt();
        }

        @Override
        public String send(String address, OutgoingMessage message) {
            refuseAfterStored();
            return envelope.send(address, message);
        }

        @Override
        public String reply(OutgoingMessage message) {
            refuseAfterStored();
            return envelope.reply(message);
        }

        /**
         * A send after the outbox rows were written (from Spring's before-commit callbacks, say) would be in no row:
         * refused, as the runtime refuses it once it was told the rows exist.
         */
        private void refuseAfterStored() {
            if (stored) {
                throw new IllegalStateException("message " + envelope.id() + ": its sends were already written to the "
                        + "outbox; send from the listener method, not after it returned");
            }
        }

        @Override
        public String toString() {
            return envelope.toString();
        }
    }

    /** Carries a checked exception through TransactionTemplate (which rolls back on it) to {@link #handle}. */
    private static final class CheckedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient Exception failure;

        CheckedFailure(Exception failure) {
            super(failure.getMessage(), failure, false, false);
            this.failure = failure;
        }
    }

    /** Hands out the current Spring transaction's connection, as a view that leaves ending it to Spring. */
    private final class TransactionBoundDataSource implements DataSource {
        private final TransactionStatus status;
        private final Attempt attempt;

        TransactionBoundDataSource(TransactionStatus status, Attempt attempt) {
            this.status = status;
            this.attempt = attempt;
        }

        @Override
        public Connection getConnection() throws SQLException {
            Object resource = TransactionSynchronizationManager.getResource(dataSource);
            if (!(resource instanceof ConnectionHolder holder)) {
                throw new IllegalStateException("transactional listener " + description + ": the transaction "
                        + "manager did not bind a connection of the store's DataSource (" + dataSource + ") to the "
                        + "transaction; it must manage that DataSource (DataSourceTransactionManager, "
                        + "JdbcTransactionManager, or JpaTransactionManager on it)");
            }
            Connection connection = holder.getConnection();
            return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                    new Class<?>[] {Connection.class}, new TransactionView(connection, status, attempt));
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            throw new SQLFeatureNotSupportedException("not used");
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
        }

        @Override
        public void setLoginTimeout(int seconds) {
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException("not used");
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }

    /**
     * commit: Spring's; rollback: mark the transaction rollback-only (outside an exception, {@code
     * JdbcTransactionalHandler} rolls back only when another owner confirmed the message first); close: the
     * transaction's.
     */
    private static final class TransactionView implements InvocationHandler {
        private final Connection connection;
        private final TransactionStatus status;
        private final Attempt attempt;

        TransactionView(Connection connection, TransactionStatus status, Attempt attempt) {
            this.connection = connection;
            this.status = status;
            this.attempt = attempt;
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            String name = method.getName();
            int arity = args == null ? 0 : args.length;
            if (arity == 0 && (name.equals("commit") || name.equals("close"))) {
                return null;
            }
            if (arity == 0 && name.equals("rollback")) {
                status.setRollbackOnly();
                attempt.rolledBackForAnotherOwner();
                return null;
            }
            if (arity == 0 && name.equals("isClosed")) {
                return connection.isClosed();
            }
            try {
                return method.invoke(connection, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }
}

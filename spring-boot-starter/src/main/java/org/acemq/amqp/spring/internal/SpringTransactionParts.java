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
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What the database-transaction listeners ({@link TransactionalListenerHandler} for one message,
 * {@link TransactionalBatchListenerHandler} for a batch) share to run the JDBC store's transactional handlers inside a
 * Spring transaction: the transaction's connection as a view whose {@code commit()} does nothing, an envelope that
 * holds back {@link OutboxCapture#outboxStored()} until Spring really committed, and how the transaction ended.
 */
final class SpringTransactionParts {

    private SpringTransactionParts() {
    }

    /**
     * @param transactionManager the listener's transaction manager
     * @return a template that runs each listener call in a transaction of its own, never joining one the calling
     *     thread may hold
     */
    static TransactionTemplate ownTransactions(PlatformTransactionManager transactionManager) {
        TransactionTemplate template = new TransactionTemplate(transactionManager);
        template.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        return template;
    }

    /**
     * How a Spring transaction ended, followed through a synchronization registered when it began; a transaction
     * manager told never to synchronize offers none, and then the end is read from the completed status (rolled back
     * although the callback returned: rollback-only).
     */
    static final class TransactionEnd implements TransactionSynchronization {
        private TransactionStatus status;
        private int completion = -1;

        /** The transaction began (call inside it). */
        void begin(TransactionStatus transaction) {
            this.status = transaction;
            if (TransactionSynchronizationManager.isSynchronizationActive()) {
                TransactionSynchronizationManager.registerSynchronization(this);
            }
        }

        @Override
        public void afterCompletion(int status) {
            completion = status;
        }

        /** @return whether the transaction committed (call after it ended) */
        boolean committed() {
            return completion == -1
                    ? status != null && status.isCompleted() && !status.isRollbackOnly()
                    : completion == STATUS_COMMITTED;
        }
    }

    /**
     * The envelope as {@code JdbcTransactionalHandler} sees it: everything the runtime's, except that the handler's
     * {@code outboxStored()} (called once its no-op commit returned) is held until Spring's real commit.
     */
    static final class CommitGate implements Envelope, OutboxCapture {
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
    static final class CheckedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient Exception failure;

        CheckedFailure(Exception failure) {
            super(failure.getMessage(), failure, false, false);
            this.failure = failure;
        }
    }

    /** Hands out the current Spring transaction's connection, as a view that leaves ending it to Spring. */
    static final class TransactionBoundDataSource implements DataSource {
        private final DataSource dataSource;
        private final TransactionStatus status;
        private final Runnable onRollback;
        private final String description;

        /**
         * @param dataSource the DataSource the transaction manager binds connections for
         * @param status the transaction
         * @param onRollback told when the store's handler rolls back (the transaction is then marked rollback-only)
         * @param description the listener, for messages
         */
        TransactionBoundDataSource(DataSource dataSource, TransactionStatus status, Runnable onRollback,
                String description) {
            this.dataSource = dataSource;
            this.status = status;
            this.onRollback = onRollback;
            this.description = description;
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
                    new Class<?>[] {Connection.class}, new TransactionView(connection, status, onRollback));
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
     * commit: Spring's; rollback: mark the transaction rollback-only and say so (outside an exception, {@code
     * JdbcTransactionalHandler} rolls back only when another owner confirmed the message first); close: the
     * transaction's.
     */
    private static final class TransactionView implements InvocationHandler {
        private final Connection connection;
        private final TransactionStatus status;
        private final Runnable onRollback;

        TransactionView(Connection connection, TransactionStatus status, Runnable onRollback) {
            this.connection = connection;
            this.status = status;
            this.onRollback = onRollback;
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
                onRollback.run();
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

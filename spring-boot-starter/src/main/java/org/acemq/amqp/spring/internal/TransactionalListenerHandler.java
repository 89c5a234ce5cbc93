package org.acemq.amqp.spring.internal;

import java.io.PrintWriter;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
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
 *   <li>method returns, confirm recorded: Spring commits work and confirm together;</li>
 *   <li>another owner confirmed first: {@code JdbcTransactionalHandler} "rolls back", i.e. the transaction is
 *       rolled back, and the method's work is undone; the delivery is accepted as done;</li>
 *   <li>the method throws: rolled back; the exception reaches the runtime unchanged;</li>
 *   <li>the commit fails: the exception reaches the runtime, which releases the claim.</li>
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
        try {
            transactions.executeWithoutResult(status -> {
                JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(store,
                        new TransactionBoundDataSource(status), (e, connection) -> {
                            listener.handle(e);
                            status.flush(); // ORM work reaches the connection before the confirm statement
                        });
                try {
                    handler.handle(envelope);
                } catch (RuntimeException | Error e) {
                    throw e;
                } catch (Exception e) {
                    throw new CheckedFailure(e);
                }
            });
        } catch (CheckedFailure e) {
            throw e.failure;
        }
    }

    @Override
    public String toString() {
        return "transactional " + listener + " on " + store.tableName();
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

        TransactionBoundDataSource(TransactionStatus status) {
            this.status = status;
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
                    new Class<?>[] {Connection.class}, new TransactionView(connection, status));
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

    /** commit: Spring's; rollback: mark the transaction rollback-only; close: the transaction's. */
    private static final class TransactionView implements InvocationHandler {
        private final Connection connection;
        private final TransactionStatus status;

        TransactionView(Connection connection, TransactionStatus status) {
            this.connection = connection;
            this.status = status;
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

package org.acemq.amqp.spring.internal;

import javax.sql.DataSource;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;

/**
 * Wraps transactional listeners in {@link TransactionalListenerHandler} (batch listeners in
 * {@link TransactionalBatchListenerHandler}), checking at startup what they need: the
 * JDBC store, a transaction manager and the DataSource it binds. Loaded only with spring-tx and spring-jdbc.
 */
final class SpringTransactionalHandlers implements ListenerContainer.TransactionalHandlers {

    private final BeanFactory beans;

    SpringTransactionalHandlers(BeanFactory beans) {
        this.beans = beans;
    }

    @Override
    public MessageHandler wrap(MessageHandler listener, IdempotencyStore store, String transactionManager,
            String description) {
        Parts parts = parts(store, transactionManager, description);
        return new TransactionalListenerHandler(listener, parts.store, parts.dataSource, parts.transactionManager,
                description);
    }

    @Override
    public BatchHandler wrapBatch(BatchHandler listener, IdempotencyStore store, String transactionManager,
            String description) {
        Parts parts = parts(store, transactionManager, description);
        return new TransactionalBatchListenerHandler(listener, parts.store, parts.dataSource, parts.transactionManager,
                description);
    }

    /** What a database-transaction listener runs on, checked. */
    private record Parts(JdbcIdempotencyStore store, DataSource dataSource,
                         PlatformTransactionManager transactionManager) {
    }

    private Parts parts(IdempotencyStore store, String transactionManager, String description) {
        if (!(store instanceof JdbcIdempotencyStore jdbc)) {
            throw new IllegalStateException("AceMQ listener " + description + " has databaseTransaction, which needs the "
                    + "JDBC store (acemq.store.type=jdbc, or a JdbcIdempotencyStore bean), but the store is a "
                    + store.getClass().getSimpleName());
        }
        PlatformTransactionManager tm;
        try {
            tm = transactionManager != null
                    ? beans.getBean(transactionManager, PlatformTransactionManager.class)
                    : beans.getBeanProvider(PlatformTransactionManager.class).getIfUnique();
        } catch (NoSuchBeanDefinitionException e) {
            tm = null;
        }
        if (tm == null) {
            throw new IllegalStateException("AceMQ listener " + description + " has databaseTransaction but "
                    + (transactionManager != null ? "there is no PlatformTransactionManager named '"
                            + transactionManager + "'" : "the application has no single PlatformTransactionManager; "
                            + "name one with transactionManager"));
        }
        DataSource dataSource = tm instanceof ResourceTransactionManager r && r.getResourceFactory() instanceof DataSource d
                ? d : beans.getBeanProvider(DataSource.class).getIfUnique();
        if (dataSource == null) {
            throw new IllegalStateException("AceMQ listener " + description + " has databaseTransaction, but the DataSource "
                    + "of transaction manager " + tm + " cannot be determined (no single DataSource bean)");
        }
        return new Parts(jdbc, dataSource, tm);
    }
}

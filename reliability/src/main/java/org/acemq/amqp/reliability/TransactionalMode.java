package org.acemq.amqp.reliability;

import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;

/**
 * The transactional handler mode: the effect row and the store's confirm commit in one transaction
 * ({@code JdbcTransactionalHandler} in idempotency-jdbc, being written on branch {@code txmode}). This is the one
 * place that wires it in; until it exists here, {@code --mode transactional} fails at start with a clear message.
 */
final class TransactionalMode {

    static final String HANDLER_CLASS = "org.acemq.amqp.store.jdbc.JdbcTransactionalHandler";

    private TransactionalMode() {
    }

    static boolean available() {
        try {
            Class.forName(HANDLER_CLASS, false, TransactionalMode.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    @SuppressWarnings("unused")
    static MessageHandler handler(DataSource effects, DataSource storePool, JdbcIdempotencyStore store, String id,
            Map<CrashPoint, Set<String>> crashes, long handlerDelayMs) {
        throw new UnsupportedOperationException("transactional mode needs " + HANDLER_CLASS
                + " (branch txmode), which is not on this classpath yet");
    }
}

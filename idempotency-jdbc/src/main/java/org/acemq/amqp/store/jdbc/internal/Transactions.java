package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;

/** Runs several statements as one transaction on a connection of the store's own. */
final class Transactions {

    private Transactions() {
    }

    /** A unit of work on a connection. */
    @FunctionalInterface
    interface Work<T> {
        T apply(Connection c) throws SQLException;
    }

    /**
     * Runs {@code work} in a transaction: on an auto-commit connection it switches auto-commit off, commits (or rolls
     * back on failure) and switches it back on; on a connection already in a transaction it just runs the work there.
     */
    static <T> T run(Connection c, Work<T> work) throws SQLException {
        if (!c.getAutoCommit()) {
            return work.apply(c);
        }
        c.setAutoCommit(false);
        try {
            T result = work.apply(c);
            c.commit();
            return result;
        } catch (SQLException | RuntimeException | Error e) {
            rollbackQuietly(c);
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            // the original failure is what matters; the pool discards a broken connection
        }
    }
}

package org.acemq.amqp.store.jdbc;

/** The store contract on MariaDB with group commit off, and the dialect set explicitly rather than read. */
class MariaDbIdempotencyStoreSingleStatementIT extends MariaDbIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(false).dialect(JdbcDialect.MARIADB);
    }
}

package org.acemq.amqp.store.jdbc;

/** The store contract on MariaDB with two group-commit slots, so that concurrent calls are batched. */
class MariaDbIdempotencyStoreGroupCommitIT extends MariaDbIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(128, 2);
    }
}

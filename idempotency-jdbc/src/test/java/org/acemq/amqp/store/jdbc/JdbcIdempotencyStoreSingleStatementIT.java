package org.acemq.amqp.store.jdbc;

/** The store contract with group commit off: every call runs its own statement. */
class JdbcIdempotencyStoreSingleStatementIT extends JdbcIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(false);
    }
}

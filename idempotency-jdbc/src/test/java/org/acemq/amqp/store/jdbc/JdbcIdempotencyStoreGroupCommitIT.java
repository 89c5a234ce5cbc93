package org.acemq.amqp.store.jdbc;

/** The store contract with group commit on: concurrent calls share batch statements. */
class JdbcIdempotencyStoreGroupCommitIT extends JdbcIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(true);
    }
}

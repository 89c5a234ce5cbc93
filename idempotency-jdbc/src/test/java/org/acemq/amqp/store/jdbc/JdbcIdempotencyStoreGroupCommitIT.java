package org.acemq.amqp.store.jdbc;

/**
 * The store contract with group commit limited to two statements at once (fewer than the contention tests' threads):
 * concurrent calls queue and share batch statements.
 */
class JdbcIdempotencyStoreGroupCommitIT extends JdbcIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(128, 2);
    }
}

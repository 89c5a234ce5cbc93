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

    /**
     * A quarter of the kit's 10,000 ids: every contention test still races all its threads on each id, and asserts
     * the same per id; {@link JdbcIdempotencyStoreIT} runs the full 10,000 on the same database.
     */
    @Override
    protected int contentionIds() {
        return 2_500;
    }
}

package org.acemq.amqp.store.jdbc;

/** The store contract on MariaDB with two group-commit slots, so that concurrent calls are batched. */
class MariaDbIdempotencyStoreGroupCommitIT extends MariaDbIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(128, 2);
    }

    /**
     * A quarter of the kit's 10,000 ids: every contention test still races all its threads on each id, and asserts
     * the same per id; {@link MariaDbIdempotencyStoreIT} runs the full 10,000 on the same database.
     */
    @Override
    protected int contentionIds() {
        return 2_500;
    }
}

package org.acemq.amqp.store.jdbc;

/**
 * The store contract on MariaDB with group commit on and every batch, even a batch of one, run through the multi-row
 * statements (the claim with {@code RETURNING}); one batch at a time, so that concurrent callers coalesce as much as
 * possible.
 */
class MariaDbIdempotencyStoreArraySqlIT extends MariaDbIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(16, 1).arraySqlForSingletons(true);
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

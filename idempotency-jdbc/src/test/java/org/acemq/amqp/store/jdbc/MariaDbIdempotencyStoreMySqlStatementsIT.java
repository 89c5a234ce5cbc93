package org.acemq.amqp.store.jdbc;

/**
 * The store contract on MariaDB running the statements the dialect runs on MySQL 8, which has no {@code RETURNING}:
 * a single claim is the upsert and an auto-commit read-back, a batch of claims the multi-row upsert and its read-back
 * in one transaction. MySQL itself is not installed here; this keeps those statements proven on the server there is.
 * Default configuration otherwise (group commit on: single ids alone, concurrent ones in batches).
 */
class MariaDbIdempotencyStoreMySqlStatementsIT extends MariaDbIdempotencyStoreIT {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.mysqlStatements(true);
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

package org.acemq.amqp.store.jdbc;

/** The store contract on H2 with two group-commit slots, so that concurrent calls are batched. */
class H2IdempotencyStoreGroupCommitTest extends H2IdempotencyStoreTest {

    @Override
    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder.groupCommit(128, 2);
    }
}

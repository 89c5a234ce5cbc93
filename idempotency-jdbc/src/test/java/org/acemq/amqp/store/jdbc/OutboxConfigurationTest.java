package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The outbox settings of the builder. No database: the store must not touch its DataSource. */
class OutboxConfigurationTest {

    @Test
    void theOutboxTableDefaultsToTheOneNextToTheStoresTable() {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(JdbcIdempotencyStoreBuilderTest.NO_DATABASE).build();
        assertThat(store.outboxTableName()).isEqualTo(JdbcIdempotencyStore.DEFAULT_OUTBOX_TABLE_NAME)
                .isEqualTo("acemq_outbox");
        assertThat(JdbcIdempotencyStore.builder(JdbcIdempotencyStoreBuilderTest.NO_DATABASE)
                .tableName("billing.orders_seen").build().outboxTableName()).isEqualTo("billing.orders_seen_outbox");
        assertThat(JdbcIdempotencyStore.builder(JdbcIdempotencyStoreBuilderTest.NO_DATABASE)
                .outboxTableName("ops.sent").build().outboxTableName()).isEqualTo("ops.sent");
        assertThat(JdbcIdempotencyStore.builder(JdbcIdempotencyStoreBuilderTest.NO_DATABASE)
                .outboxTableName("ops.sent").outboxTableName(null).build().outboxTableName())
                .as("null: the derived name again").isEqualTo("acemq_outbox");
    }

    @Test
    void anOutboxTableNameIsValidatedLikeTheTableName() {
        JdbcIdempotencyStore.Builder builder = JdbcIdempotencyStore.builder(JdbcIdempotencyStoreBuilderTest.NO_DATABASE);
        assertThatThrownBy(() -> builder.outboxTableName("x; DROP TABLE y")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tableName must be [schema.]name").hasMessageContaining("x; DROP TABLE y");
        assertThatThrownBy(() -> builder.outboxTableName("Outbox")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.outboxTableName("o".repeat(49))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theOutboxTableMustNotBeTheStoresTable() {
        assertThatThrownBy(() -> JdbcIdempotencyStore.builder(JdbcIdempotencyStoreBuilderTest.NO_DATABASE)
                .tableName("s.t").outboxTableName("s.t").build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("outboxTableName must differ from tableName, but both were 's.t'");
    }
}

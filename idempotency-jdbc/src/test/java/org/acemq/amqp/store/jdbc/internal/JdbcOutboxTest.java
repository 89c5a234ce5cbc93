package org.acemq.amqp.store.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The outbox's pure rules: the default table name and the bounded error text. No database. */
class JdbcOutboxTest {

    @Test
    void theDefaultOutboxTableSitsNextToTheStoresTable() {
        assertThat(JdbcOutbox.defaultFor(TableName.parse("acemq_idempotency"))).isEqualTo(TableName.parse("acemq_outbox"));
        assertThat(JdbcOutbox.defaultFor(TableName.parse("billing.acemq_idempotency")))
                .isEqualTo(TableName.parse("billing.acemq_outbox"));
        assertThat(JdbcOutbox.defaultFor(TableName.parse("orders_seen"))).isEqualTo(TableName.parse("orders_seen_outbox"));
        assertThat(JdbcOutbox.defaultFor(TableName.parse("idempotency"))).isEqualTo(TableName.parse("outbox"));
    }

    @Test
    void aDerivedNameThatWouldBeTooLongIsShortenedWithAHashOfTheStoreTable() {
        String a = "a".repeat(TableName.MAX_NAME_LENGTH);
        String b = "a".repeat(TableName.MAX_NAME_LENGTH - 1) + "b";
        TableName outboxA = JdbcOutbox.defaultFor(TableName.parse(a));
        TableName outboxB = JdbcOutbox.defaultFor(TableName.parse(b));
        assertThat(outboxA.name()).hasSize(TableName.MAX_NAME_LENGTH).endsWith("_outbox").startsWith("a".repeat(32));
        assertThat(TableName.parse(outboxA.toString())).as("a valid name").isEqualTo(outboxA);
        assertThat(outboxB).as("two long names that share their start get two outboxes").isNotEqualTo(outboxA);
        assertThat(JdbcOutbox.defaultFor(TableName.parse(a))).as("the same every time").isEqualTo(outboxA);
        assertThat(JdbcOutbox.defaultFor(TableName.parse("x".repeat(41))).name()).as("41 + 7 fits")
                .isEqualTo("x".repeat(41) + "_outbox");
    }

    @Test
    void theKeptErrorIsStorableAndBounded() {
        assertThat(JdbcOutbox.boundedError(null)).isEqualTo("(no message)");
        assertThat(JdbcOutbox.boundedError("  ")).isEqualTo("(no message)");
        assertThat(JdbcOutbox.boundedError("a\u0000b\uDC00c")).isEqualTo("a\uFFFDb\uFFFDc");
        assertThat(JdbcOutbox.boundedError("x".repeat(5_000))).hasSize(JdbcOutbox.MAX_ERROR_LENGTH);
        String pairAtTheEnd = "x".repeat(JdbcOutbox.MAX_ERROR_LENGTH - 1) + "\uD83D\uDE00" + "tail";
        assertThat(JdbcOutbox.boundedError(pairAtTheEnd)).as("never half a surrogate pair")
                .isEqualTo("x".repeat(JdbcOutbox.MAX_ERROR_LENGTH - 1));
        assertThat(JdbcOutbox.boundedError("rejected: amqp:not-found")).isEqualTo("rejected: amqp:not-found");
    }
}

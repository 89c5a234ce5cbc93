package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.store.jdbc.internal.PostgresSql;
import org.acemq.amqp.store.jdbc.internal.TableName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Pure unit tests: configuration, table-name validation, SQL generation. No database. */
class JdbcIdempotencyStoreBuilderTest {

    /** A DataSource that fails the test if the store ever asks it for a connection. */
    static final DataSource NO_DATABASE = (DataSource) Proxy.newProxyInstance(
            JdbcIdempotencyStoreBuilderTest.class.getClassLoader(), new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
                throw new AssertionError("the store touched the DataSource: " + method.getName());
            });

    @Test
    void defaults() {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(NO_DATABASE).build();
        assertThat(store.leaseDuration()).isEqualTo(JdbcIdempotencyStore.DEFAULT_LEASE).isEqualTo(Duration.ofSeconds(30));
        assertThat(store.retention()).isEqualTo(JdbcIdempotencyStore.DEFAULT_RETENTION).isEqualTo(Duration.ofHours(24));
        assertThat(store.tableName()).isEqualTo(JdbcIdempotencyStore.DEFAULT_TABLE_NAME).isEqualTo("acemq_idempotency");
        assertThat(store.owner()).isNotNull();
        assertThat(JdbcIdempotencyStore.builder(NO_DATABASE).build().owner()).isNotEqualTo(store.owner());
    }

    @Test
    void groupCommitIsOnByDefaultWithAsManyStatementsAtOnceAsThePoolHasConnections() {
        JdbcIdempotencyStore unknownPool = JdbcIdempotencyStore.builder(NO_DATABASE).build();
        assertThat(unknownPool.groupCommitEnabled()).isTrue();
        assertThat(unknownPool.groupCommitMaxInFlight()).as("a DataSource whose pool size cannot be read")
                .isEqualTo(JdbcIdempotencyStore.DEFAULT_GROUP_COMMIT_MAX_IN_FLIGHT).isEqualTo(8);
        try (com.zaxxer.hikari.HikariDataSource hikari = new com.zaxxer.hikari.HikariDataSource()) {
            hikari.setMaximumPoolSize(12); // not started: the no-argument constructor connects on first use only
            assertThat(JdbcIdempotencyStore.builder(hikari).build().groupCommitMaxInFlight()).isEqualTo(12);
            assertThat(JdbcIdempotencyStore.builder(hikari).groupCommit(false).groupCommit(true).build()
                    .groupCommitMaxInFlight()).as("groupCommit(true) restores the default").isEqualTo(12);
            assertThat(JdbcIdempotencyStore.builder(hikari).groupCommit(16, 3).build().groupCommitMaxInFlight())
                    .isEqualTo(3);
        }
        JdbcIdempotencyStore off = JdbcIdempotencyStore.builder(NO_DATABASE).groupCommit(false).build();
        assertThat(off.groupCommitEnabled()).isFalse();
        assertThat(off.toString()).contains("groupCommit=off");
        assertThat(unknownPool.toString()).contains("groupCommit=on, maxInFlight 8");
    }

    @Test
    void settingsAreKept() {
        UUID owner = UUID.randomUUID();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(NO_DATABASE).tableName("app.dedup")
                .lease(Duration.ofMillis(1500)).retention(Duration.ofDays(7)).owner(owner).build();
        assertThat(store.tableName()).isEqualTo("app.dedup");
        assertThat(store.leaseDuration()).isEqualTo(Duration.ofMillis(1500));
        assertThat(store.retention()).isEqualTo(Duration.ofDays(7));
        assertThat(store.owner()).isEqualTo(owner);
    }

    @Test
    void durationsAreValidatedWithTheSettingTheRuleAndTheValue() {
        JdbcIdempotencyStore.Builder b = JdbcIdempotencyStore.builder(NO_DATABASE);
        assertThatThrownBy(() -> b.lease(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lease must be > 0, but was PT0S");
        assertThatThrownBy(() -> b.retention(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retention must be > 0, but was PT-1S");
        assertThatThrownBy(() -> b.lease(Duration.ofNanos(1000))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lease must be at least 1 ms, but was PT0.000001S");
        assertThatThrownBy(() -> b.lease(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("lease must not be null");
        assertThatThrownBy(() -> b.purgeBatchSize(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("purgeBatchSize must be >= 1, but was 0");
        assertThatThrownBy(() -> b.purgePause(Duration.ofMillis(-5))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("purgePause must be >= 0, but was PT-0.005S");
        assertThatThrownBy(() -> JdbcIdempotencyStore.builder(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("dataSource must not be null");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"x; DROP TABLE y\"", "x; DROP TABLE y", "x;", "a b", "\"quoted\"", "Upper",
        "1starts_with_digit", "", "a.b.c", ".x", "x.", "schema.\"x\"", "x--", "x/*", "ümlaut",
        "a_name_that_is_far_too_long_for_the_derived_index_names_x"})
    void tableNamesThatCouldInjectSqlOrBreakItAreRejected(String name) {
        assertThatThrownBy(() -> JdbcIdempotencyStore.builder(NO_DATABASE).tableName(name))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("tableName must be [schema.]name made of lowercase letters, digits and "
                        + "underscores")
                .hasMessageEndingWith("but was '" + name + "'");
    }

    @Test
    void theInjectionExampleFromTheDocsIsRejectedClearly() {
        assertThatThrownBy(() -> JdbcIdempotencyStore.builder(NO_DATABASE).tableName("\"x; DROP TABLE y\""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("tableName must be [schema.]name made of lowercase letters, digits and underscores, not "
                        + "starting with a digit (schema at most 63 characters, name at most 48), but was "
                        + "'\"x; DROP TABLE y\"'");
        assertThatThrownBy(() -> JdbcIdempotencyStore.builder(NO_DATABASE).tableName(null))
                .isInstanceOf(NullPointerException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"acemq_idempotency", "_x", "x1", "public.acemq_idempotency", "user", "s_1.t_2",
        "a_name_that_is_exactly_forty_eight_characters_xx"})
    void plainNamesAreAccepted(String name) {
        assertThat(JdbcIdempotencyStore.builder(NO_DATABASE).tableName(name).build().tableName()).isEqualTo(name);
    }

    @Test
    void tableNamesAreQuotedInTheSql() {
        assertThat(TableName.parse("user").sql()).isEqualTo("\"user\"");
        assertThat(TableName.parse("app.user").sql()).isEqualTo("\"app\".\"user\"");
        PostgresSql sql = new PostgresSql(TableName.parse("app.dedup"), Duration.ofSeconds(30), Duration.ofHours(1));
        assertThat(sql.acquire).contains("INSERT INTO \"app\".\"dedup\" AS t").contains("interval '1 millisecond' * 30000");
        assertThat(sql.ddl).hasSize(3);
        assertThat(sql.ddl.get(0)).startsWith("CREATE TABLE IF NOT EXISTS \"app\".\"dedup\" (")
                .contains("CONSTRAINT dedup_pkey PRIMARY KEY (id)").contains("fingerprint text,")
                .doesNotContain("${").doesNotContain("--");
        assertThat(sql.ddl.get(1)).startsWith("DO $$").contains("'\"app\".\"dedup\"'::regclass")
                .contains("ALTER TABLE \"app\".\"dedup\" ADD COLUMN IF NOT EXISTS fingerprint text;")
                .endsWith("END $$").doesNotContain("${");
        assertThat(sql.ddl.get(2)).isEqualTo(
                "CREATE INDEX IF NOT EXISTS dedup_expires_at_idx ON \"app\".\"dedup\" (expires_at)");
    }

    @Test
    void invalidIdsFailBeforeTheDatabaseIsTouched() {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(NO_DATABASE).build();
        String tooLong = "x".repeat(MessageIds.MAX_LENGTH + 1);
        for (String bad : new String[] {"", "  ", tooLong}) {
            assertThatThrownBy(() -> store.acquire(bad)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.tryClaim(bad)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.claim(bad)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.confirm(bad)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.release(bad)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.isConfirmed(bad)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.attempts(bad)).isInstanceOf(IllegalArgumentException.class);
            Claim claim = new Claim(bad, ClaimResult.CLAIMED, 1);
            assertThatThrownBy(() -> store.renew(claim)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.confirm(claim)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.release(claim)).isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> store.acquire(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> store.confirm((String) null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> store.confirm((Claim) null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> store.purgeExpired(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("batchSize must be >= 1, but was 0");
    }

    @Test
    void claimsThatWereNotClaimedHaveNoLeaseToRenewOrRelease() throws SQLException {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(NO_DATABASE).build();
        Claim notMine = new Claim("m", ClaimResult.IN_PROGRESS, 3);
        assertThat(store.renew(notMine)).isFalse();
        assertThat(store.release(notMine)).isFalse();
    }
}

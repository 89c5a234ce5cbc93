package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.StoreUnavailableException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the MariaDB and H2 dialects must do beyond the store contract: be chosen from the connection, tell a refused key
 * from an outage, purge in bounded batches, confirm inside a caller's transaction, and ship DDL that creates a working
 * table. Subclasses give the database.
 */
abstract class DialectSpecificsContract {

    static final Duration LEASE = Duration.ofSeconds(10);
    static final Duration RETENTION = Duration.ofSeconds(60);

    /** @return the test class's fixture */
    abstract DialectFixture db();

    /** @return an SQL statement that narrows the id column to 8 (bytes or characters) */
    abstract String narrowIdColumn();

    /** @return an SQL statement that widens it back */
    abstract String widenIdColumn();

    /** @return a JDBC URL of this product on which nothing listens */
    abstract String unreachableUrl();

    JdbcIdempotencyStore store;

    @BeforeEach
    void freshTable() {
        db().truncate();
        store = db().builder().lease(LEASE).retention(RETENTION).build();
    }

    @Test
    void theDialectIsReadFromTheConnectionAndCreateSchemaIsIdempotent() {
        assertThat(store.dialect()).isEqualTo(db().dialect);
        assertThat(store.toString()).contains("dialect=" + db().dialect);
        store.createSchema();
        store.createSchema();
        assertThat(store.schemaStatements()).isNotEmpty()
                .allSatisfy(s -> assertThat(s).containsAnyOf("acemq_idempotency", "acemq_outbox"));
        assertThat(store.acquire("a").claimed()).isTrue();
    }

    @Test
    void aKeyTheColumnCannotHoldIsRefusedForThatKeyAloneAndNothingIsWritten() {
        db().update(narrowIdColumn());
        try {
            assertThatThrownBy(() -> store.acquire("much-too-long-for-eight"))
                    .isInstanceOf(InvalidMessageIdException.class)
                    .hasMessageContaining("refused the id");
            assertThat(store.acquire("short").claimed()).isTrue();
            assertThatThrownBy(() -> store.acquireAll(List.of("ok-1", "much-too-long-for-eight", "ok-2")))
                    .isInstanceOf(InvalidMessageIdException.class)
                    .hasMessageContaining("much-too-long-for-eight");
            assertThat(db().count("")).as("only 'short': the refused batch wrote nothing").isEqualTo(1);
            assertThatThrownBy(() -> store.confirm("much-too-long-for-eight"))
                    .isInstanceOf(InvalidMessageIdException.class);
        } finally {
            db().truncate();
            db().update(widenIdColumn());
        }
    }

    @Test
    void anUnreachableDatabaseIsAnOutageNotARefusedKey() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(unreachableUrl());
        config.setUsername("nobody");
        config.setPassword("none");
        config.setConnectionTimeout(500);
        config.setInitializationFailTimeout(-1);
        try (HikariDataSource down = new HikariDataSource(config)) {
            JdbcIdempotencyStore unreachable = JdbcIdempotencyStore.builder(down).dialect(db().dialect).build();
            assertThatThrownBy(() -> unreachable.acquire("a")).isInstanceOf(StoreUnavailableException.class)
                    .isNotInstanceOf(InvalidMessageIdException.class);
            assertThatThrownBy(() -> unreachable.confirm("a")).isInstanceOf(StoreUnavailableException.class);
            assertThatThrownBy(() -> unreachable.purgeExpired(10)).isInstanceOf(StoreUnavailableException.class);
        }
    }

    @Test
    void thePurgeDeletesOnlyForgottenRowsInBatchesOfTheGivenSize() {
        for (int i = 0; i < 25; i++) {
            store.confirm("old-" + i);
        }
        db().advanceTime(RETENTION.plusSeconds(1));
        store.confirm("recent");
        Claim live = store.acquire("live");
        assertThat(store.purgeExpired(10)).isEqualTo(10);
        assertThat(store.purgeExpired()).isEqualTo(15);
        assertThat(db().count("")).isEqualTo(2);
        assertThat(store.isConfirmed("recent")).isTrue();
        assertThat(store.confirm(live)).isTrue();
    }

    @Test
    void aConfirmInTheCallersTransactionCommitsWithItAndAnotherTransactionSeesItConfirmed() throws Exception {
        Claim claim = store.acquire("tx-1");
        try (Connection c = db().pool.getConnection()) {
            c.setAutoCommit(false);
            assertThat(store.confirmInTransaction(c, claim))
                    .isEqualTo(JdbcIdempotencyStore.TransactionalConfirm.CONFIRMED);
            assertThat(store.isConfirmed("tx-1")).as("not before the commit").isFalse();
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(store.isConfirmed("tx-1")).isTrue();
        assertThat(store.confirm(claim)).as("the runtime's confirm afterwards: held, quiet").isTrue();
        try (Connection c = db().pool.getConnection()) {
            c.setAutoCommit(false);
            assertThat(store.confirmInTransaction(c, claim))
                    .isEqualTo(JdbcIdempotencyStore.TransactionalConfirm.ALREADY_CONFIRMED);
            c.rollback();
            c.setAutoCommit(true);
        }
        // an id without a row (never claimed here): recorded, but the lease was not held
        try (Connection c = db().pool.getConnection()) {
            c.setAutoCommit(false);
            assertThat(store.confirmInTransaction(c, new Claim("tx-2", ClaimResult.CLAIMED, 1)))
                    .isEqualTo(JdbcIdempotencyStore.TransactionalConfirm.CONFIRMED_LEASE_LOST);
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(store.isConfirmed("tx-2")).as("rolled back").isFalse();
    }

    @Test
    void ofManyStoresClaimingOneNewIdAtOnceExactlyOneWinsAndTheOthersSeeItInProgress() throws Exception {
        int threads = 12;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int round = 0; round < 5; round++) {
                String id = "race-" + round;
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Claim>> claims = new ArrayList<>();
                for (int i = 0; i < threads; i++) {
                    JdbcIdempotencyStore peer = db().builder().lease(LEASE).retention(RETENTION).groupCommit(false)
                            .build();
                    Callable<Claim> claim = () -> {
                        start.await();
                        return peer.acquire(id, "fp");
                    };
                    claims.add(pool.submit(claim));
                }
                start.countDown();
                int won = 0;
                for (Future<Claim> f : claims) {
                    Claim c = f.get(30, TimeUnit.SECONDS);
                    if (c.claimed()) {
                        won++;
                        assertThat(c.attempt()).isEqualTo(1);
                    } else {
                        assertThat(c.result()).isEqualTo(ClaimResult.IN_PROGRESS);
                    }
                }
                assertThat(won).as("round " + round).isEqualTo(1);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void keysAndScopesReadBackForTheOperatorsTool() {
        store.acquire("s1|a");
        store.confirm("s1|b");
        store.acquire("plain");
        assertThat(store.keysOfScope("s1", 10)).containsOnlyKeys("s1|a", "s1|b");
        JdbcIdempotencyStore.Row row = store.describe("s1|b");
        assertThat(row.state()).isEqualTo(1);
        assertThat(row.remembered()).isTrue();
        assertThat(row.expiresAt()).isNotNull();
        assertThat(store.scopes()).extracting(JdbcIdempotencyStore.ScopeCount::scope).containsExactly(null, "s1");
    }
}

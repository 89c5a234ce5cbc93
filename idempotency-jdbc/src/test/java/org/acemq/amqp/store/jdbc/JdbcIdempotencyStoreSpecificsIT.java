package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.StoreUnavailableException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What only the JDBC store has: schema, SQL, clock, connections, transactions, errors, purge. Real PostgreSQL. */
@Timeout(120)
class JdbcIdempotencyStoreSpecificsIT {

    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofHours(1);

    static PgFixture db;
    JdbcIdempotencyStore store;
    JdbcIdempotencyStore peer;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcIdempotencyStoreSpecificsIT.class);
    }

    @AfterAll
    static void dropDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @BeforeEach
    void freshTable() {
        db.truncate();
        store = db.store(LEASE, RETENTION);
        peer = db.store(LEASE, RETENTION);
    }

    // ---------------------------------------------------------------------------------------------- schema

    @Test
    void createSchemaIsIdempotentAndSafeToRunConcurrently() throws Exception {
        JdbcIdempotencyStore fresh = db.builder().tableName(db.schema.qualify("ddl_test")).build();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                runs.add(pool.submit(fresh::createSchema));
            }
            for (Future<?> f : runs) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        fresh.createSchema();
        assertThat(db.column("SELECT column_name || ' ' || data_type || ' ' || is_nullable FROM "
                + "information_schema.columns WHERE table_schema = ? AND table_name = 'ddl_test' ORDER BY "
                + "ordinal_position", db.schema.name())).containsExactly(
                        "lease_until timestamp with time zone YES",
                        "expires_at timestamp with time zone NO",
                        "owner uuid YES",
                        "attempts integer NO",
                        "state smallint NO",
                        "id text NO",
                        "fingerprint text YES");
        assertThat(db.column("SELECT indexname FROM pg_indexes WHERE schemaname = ? AND tablename = 'ddl_test' "
                + "ORDER BY 1", db.schema.name())).containsExactly("ddl_test_expires_at_idx", "ddl_test_pkey");
        assertThat(fresh.acquire("after-ddl").claimed()).isTrue();
    }

    @Test
    void reservedWordsWorkAsTableNamesBecauseTheNameIsQuoted() {
        JdbcIdempotencyStore user = db.builder().tableName(db.schema.qualify("user")).build();
        user.createSchema();
        Claim claim = user.acquire("m");
        assertThat(user.confirm(claim)).isTrue();
        assertThat(user.tryClaim("m")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(db.column("SELECT count(*) FROM " + db.schema.name() + ".\"user\"")).containsExactly(1L);
        assertThat(db.count("")).as("the default table is untouched").isZero();
    }

    @Test
    void aMissingTableIsStoreUnavailableWithTheCause() {
        JdbcIdempotencyStore noTable = db.builder().tableName(db.schema.qualify("does_not_exist")).build();
        assertThatThrownBy(() -> noTable.acquire("m1")).isInstanceOf(StoreUnavailableException.class)
                .hasMessageContaining("acquire('m1') failed [SQLState 42P01]")
                .hasCauseInstanceOf(SQLException.class);
    }

    // ------------------------------------------------------------------------------------------- semantics

    @Test
    void claimConfirmDuplicate() {
        Claim claim = store.acquire("m1");
        assertThat(claim).isEqualTo(new Claim("m1", ClaimResult.CLAIMED, 1));
        assertThat(peer.acquire("m1")).isEqualTo(new Claim("m1", ClaimResult.IN_PROGRESS, 1));
        assertThat(store.acquire("m1").result()).isEqualTo(ClaimResult.IN_PROGRESS); // not re-entrant
        assertThat(store.isConfirmed("m1")).isFalse();
        assertThat(store.confirm(claim)).isTrue();
        assertThat(store.isConfirmed("m1")).isTrue();
        assertThat(peer.acquire("m1")).isEqualTo(new Claim("m1", ClaimResult.ALREADY_CONFIRMED, 1));
        assertThat(peer.tryClaim("m1")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(peer.claim("m1")).isFalse();
        assertThat(store.release(claim)).isFalse();
        assertThat(store.isConfirmed("m1")).isTrue();
    }

    @Test
    void attemptsCountReleasesAndTakeoversAndAreFencedByOwnerAndAttempt() {
        Claim first = store.acquire("m");
        assertThat(first.attempt()).isEqualTo(1);
        assertThat(store.release(first)).isTrue();
        assertThat(store.release(first)).isFalse();
        assertThat(store.attempts("m")).isEqualTo(1);

        Claim second = store.acquire("m");
        assertThat(second.attempt()).isEqualTo(2);
        assertThat(store.release(first)).as("a stale claim of the same owner").isFalse();
        assertThat(store.renew(first)).isFalse();
        assertThat(store.renew(second)).isTrue();

        db.advanceTime(LEASE);
        Claim third = peer.acquire("m");
        assertThat(third).isEqualTo(new Claim("m", ClaimResult.CLAIMED, 3));
        assertThat(store.renew(second)).isFalse();
        assertThat(store.release(second)).isFalse();
        store.release("m"); // owner-fenced: not ours any more
        assertThat(store.acquire("m").result()).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.attempts("m")).isEqualTo(3);

        assertThat(store.confirm(second)).as("lease lost, completion recorded all the same").isFalse();
        assertThat(store.isConfirmed("m")).isTrue();
        assertThat(peer.confirm(third)).isFalse();
        assertThat(peer.release(third)).isFalse();
        assertThat(peer.acquire("m").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void releaseByIdActsOnlyOnTheOwnersUnconfirmedClaim() {
        store.acquire("a");
        peer.release("a");
        assertThat(peer.acquire("a").result()).isEqualTo(ClaimResult.IN_PROGRESS);
        store.release("a");
        assertThat(peer.acquire("a")).isEqualTo(new Claim("a", ClaimResult.CLAIMED, 2));
        peer.confirm("a");
        peer.release("a");
        assertThat(peer.isConfirmed("a")).isTrue();
        store.release("never-seen");
        assertThat(db.count("id = 'never-seen'")).isZero();
    }

    @Test
    void confirmRecordsCompletionEvenWithoutARow() {
        store.confirm("never-claimed");
        assertThat(peer.tryClaim("never-claimed")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        Claim claim = store.acquire("purged");
        db.update("DELETE FROM " + db.table + " WHERE id = 'purged'");
        assertThat(store.confirm(claim)).isFalse();
        assertThat(peer.acquire("purged")).isEqualTo(new Claim("purged", ClaimResult.ALREADY_CONFIRMED, 1));
    }

    @Test
    void retentionForgetsConfirmationsAndAttemptCounts() {
        Claim claim = store.acquire("r");
        store.release(claim);
        store.confirm(store.acquire("r"));
        db.advanceTime(RETENTION.minusSeconds(1));
        assertThat(peer.tryClaim("r")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        db.advanceTime(Duration.ofSeconds(1));
        assertThat(peer.isConfirmed("r")).isFalse();
        assertThat(peer.attempts("r")).isZero();
        assertThat(peer.acquire("r")).isEqualTo(new Claim("r", ClaimResult.CLAIMED, 1));
    }

    @Test
    void anAbandonedClaimKeepsItsAttemptCountForTheRetentionAfterTheLease() {
        store.acquire("crash");
        db.advanceTime(LEASE.plus(RETENTION).minusSeconds(1));
        assertThat(peer.acquire("crash").attempt()).isEqualTo(2);
        db.advanceTime(LEASE.plus(RETENTION));
        assertThat(store.acquire("crash").attempt()).as("forgotten together with the row").isEqualTo(1);
    }

    // ---------------------------------------------------------------------------------------------- clock

    @Test
    void leasesAreComputedAndComparedWithTheDatabaseClock() {
        store.acquire("clock");
        // lease_until was computed from the database's now(), in the same statement as the insert
        List<Object> remaining = db.column("SELECT extract(epoch FROM lease_until - now()) * 1000 FROM " + db.table
                + " WHERE id = 'clock'");
        assertThat(((Number) remaining.get(0)).doubleValue()).isBetween(LEASE.toMillis() - 5_000.0,
                (double) LEASE.toMillis());
        List<Object> expiry = db.column("SELECT expires_at - lease_until = interval '1 hour' FROM " + db.table
                + " WHERE id = 'clock'");
        assertThat(expiry).containsExactly(true);
        // the JVM clock has not moved, yet the lease is over as soon as the database says so
        assertThat(peer.tryClaim("clock")).isEqualTo(ClaimResult.IN_PROGRESS);
        db.update("UPDATE " + db.table + " SET lease_until = now() WHERE id = 'clock'");
        assertThat(peer.acquire("clock")).isEqualTo(new Claim("clock", ClaimResult.CLAIMED, 2));
        // and a lease the database considers live is honoured however wrong a JVM clock might be
        db.update("UPDATE " + db.table + " SET lease_until = now() + interval '1 millisecond' * 200 WHERE id = "
                + "'clock'");
        assertThat(store.tryClaim("clock")).isEqualTo(ClaimResult.IN_PROGRESS);
    }

    @Test
    void renewExtendsTheLeaseFromTheDatabasesNow() {
        Claim claim = store.acquire("renew");
        db.advanceTime(LEASE.minusSeconds(1));
        assertThat(store.renew(claim)).isTrue();
        db.advanceTime(Duration.ofSeconds(2));
        assertThat(peer.tryClaim("renew")).isEqualTo(ClaimResult.IN_PROGRESS);
        db.advanceTime(LEASE);
        assertThat(store.renew(claim)).as("a lapsed lease is lost").isFalse();
        assertThat(peer.acquire("renew").attempt()).isEqualTo(2);
    }

    // --------------------------------------------------------------------------------- errors, connections

    @Test
    void anUnreachableServerIsStoreUnavailableWithTheCauseAndNothingIsWritten() {
        DataSource closedPort = driverManager("jdbc:postgresql://127.0.0.1:1/acemq?connectTimeout=2");
        JdbcIdempotencyStore down = JdbcIdempotencyStore.builder(closedPort).tableName(db.table).build();
        Claim claim = new Claim("down", ClaimResult.CLAIMED, 1);
        List<Runnable> operations = List.of(() -> down.acquire("down"), () -> down.tryClaim("down"),
                () -> down.claim("down"), () -> down.confirm("down"), () -> down.release("down"),
                () -> down.isConfirmed("down"), () -> down.attempts("down"), () -> down.renew(claim),
                () -> down.confirm(claim), () -> down.release(claim), () -> down.purgeExpired(10),
                down::purgeExpired, down::createSchema);
        for (Runnable op : operations) {
            assertThatThrownBy(op::run).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("SQLState 08001")
                    .hasCauseInstanceOf(SQLException.class);
        }
        assertThat(db.count("")).isZero();
    }

    @Test
    void anExhaustedPoolIsStoreUnavailableAndTheCallersTransactionIsUnaffected() throws SQLException {
        db.update("CREATE TABLE IF NOT EXISTS caller_data (v int)");
        db.update("DELETE FROM caller_data");
        try (HikariDataSource one = PgFixture.pool(db.schema, 1, true, Duration.ofMillis(250))) {
            JdbcIdempotencyStore starved = JdbcIdempotencyStore.builder(one).tableName(db.table).build();
            try (Connection caller = one.getConnection()) {
                caller.setAutoCommit(false);
                try (Statement s = caller.createStatement()) {
                    s.executeUpdate("INSERT INTO caller_data VALUES (1)");
                }
                assertThatThrownBy(() -> starved.acquire("starved")).isInstanceOf(StoreUnavailableException.class)
                        .hasCauseInstanceOf(SQLException.class);
                try (Statement s = caller.createStatement()) {
                    s.executeUpdate("INSERT INTO caller_data VALUES (2)");
                }
                caller.commit();
            }
            assertThat(starved.acquire("starved").claimed()).isTrue();
        }
        assertThat(db.column("SELECT count(*) FROM caller_data")).containsExactly(2L);
    }

    @Test
    void aCallersTransactionOnTheSameIdsIsNeverAborted() throws SQLException {
        // the caller works in a transaction on its own connection while the store hits conflicts on the same ids
        store.confirm("dup");
        try (Connection caller = db.pool.getConnection()) {
            caller.setAutoCommit(false);
            try (Statement s = caller.createStatement()) {
                s.executeQuery("SELECT count(*) FROM " + db.table).close();
            }
            assertThat(store.acquire("dup").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            assertThat(peer.acquire("x").claimed()).isTrue();
            assertThat(store.acquire("x").result()).isEqualTo(ClaimResult.IN_PROGRESS);
            store.confirm("dup");
            try (Statement s = caller.createStatement()) {
                s.executeQuery("SELECT 1").close(); // would fail with 25P02 if the transaction had been aborted
            }
            caller.commit();
        }
    }

    @Test
    void aConnectionBoundToACallersTransactionIsRefusedAndTheTransactionSurvives() throws SQLException {
        db.update("CREATE TABLE IF NOT EXISTS caller_data (v int)");
        db.update("DELETE FROM caller_data");
        try (Connection caller = db.pool.getConnection()) {
            caller.setAutoCommit(false);
            try (Statement s = caller.createStatement()) {
                s.executeUpdate("INSERT INTO caller_data VALUES (7)");
            }
            JdbcIdempotencyStore bound = JdbcIdempotencyStore.builder(transactionBound(caller)).tableName(db.table)
                    .build();
            assertThatThrownBy(() -> bound.acquire("bound")).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("inside an open transaction");
            assertThat(caller.getAutoCommit()).isFalse();
            try (Statement s = caller.createStatement()) {
                s.executeUpdate("INSERT INTO caller_data VALUES (8)");
            }
            caller.rollback(); // the caller decides: had the store switched auto-commit on, 7 would be committed
        }
        assertThat(db.column("SELECT count(*) FROM caller_data")).containsExactly(0L);
        assertThat(db.count("id = 'bound'")).isZero();
    }

    @Test
    void aPoolWithAutoCommitOffWorksAndGetsItsConnectionsBackUnchanged() throws SQLException {
        try (HikariDataSource manual = PgFixture.pool(db.schema, 1, false)) {
            JdbcIdempotencyStore s = JdbcIdempotencyStore.builder(manual).tableName(db.table).build();
            Claim claim = s.acquire("manual");
            assertThat(claim.claimed()).isTrue();
            assertThat(peer.tryClaim("manual")).as("committed, visible elsewhere").isEqualTo(ClaimResult.IN_PROGRESS);
            assertThat(s.confirm(claim)).isTrue();
            assertThat(peer.isConfirmed("manual")).isTrue();
            try (Connection c = manual.getConnection()) {
                assertThat(c.getAutoCommit()).isFalse();
            }
        }
    }

    /** An unpooled DataSource: DriverManager. */
    static DataSource driverManager(String url) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        return DriverManager.getConnection(url);
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    /** A DataSource that, like a transaction-aware proxy, always hands out the caller's connection. */
    static DataSource transactionBound(Connection callers) {
        Connection unclosable = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        return null;
                    }
                    try {
                        return method.invoke(callers, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        return unclosable;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    // ---------------------------------------------------------------------------------------------- purge

    @Test
    void purgeDeletesOnlyForgottenRowsInBatches() {
        for (int i = 0; i < 25; i++) {
            store.confirm("old-" + i);
        }
        Claim oldClaim = store.acquire("old-claim");
        db.advanceTime(RETENTION.plus(LEASE));
        store.confirm("fresh-confirmed");
        Claim live = store.acquire("fresh-claim");
        Claim lapsed = store.acquire("lapsed-claim");
        db.update("UPDATE " + db.table + " SET lease_until = now() - interval '1 second' WHERE id = 'lapsed-claim'");
        store.release(store.acquire("fresh-released"));
        assertThat(db.count("")).isEqualTo(30);

        assertThat(store.purgeExpired(10)).isEqualTo(10);
        assertThat(store.purgeExpired(10)).isEqualTo(10);
        assertThat(store.purgeExpired(10)).isEqualTo(6);
        assertThat(store.purgeExpired(10)).isZero();
        assertThat(db.column("SELECT id FROM " + db.table + " ORDER BY id")).containsExactly(
                "fresh-claim", "fresh-confirmed", "fresh-released", "lapsed-claim");
        assertThat(store.confirm(oldClaim)).isFalse();
        assertThat(store.renew(live)).isTrue();
        assertThat(peer.acquire("lapsed-claim").attempt()).isEqualTo(lapsed.attempt() + 1);

        JdbcIdempotencyStore batched = db.builder().purgeBatchSize(7).purgePause(Duration.ofMillis(1)).build();
        for (int i = 0; i < 50; i++) {
            store.confirm("batch-" + i);
        }
        db.advanceTime(RETENTION.plus(LEASE));
        long before = db.count("");
        assertThat(batched.purgeExpired()).isEqualTo(before);
        assertThat(db.count("")).isZero();
    }

    // -------------------------------------------------------------------------------------- concurrency

    @Test
    void sixteenThreadsRacingForTheSameIdsClaimEachExactlyOnce() throws Exception {
        int threads = 16;
        int ids = 10_000;
        List<JdbcIdempotencyStore> stores = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            // a lease far longer than the test: on a loaded machine the race can outlast 30 s, and a takeover
            // after the lease is a correct second CLAIMED
            stores.add(db.store(Duration.ofHours(1), Duration.ofHours(2)));
        }
        ConcurrentHashMap<String, Integer> winners = new ConcurrentHashMap<>();
        AtomicInteger confirmedSeen = new AtomicInteger();
        AtomicInteger inProgressSeen = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                runs.add(pool.submit(() -> {
                    List<Integer> order = new ArrayList<>();
                    for (int i = 0; i < ids; i++) {
                        order.add(i);
                    }
                    Collections.shuffle(order, new Random(thread));
                    JdbcIdempotencyStore mine = stores.get(thread);
                    for (int i : order) {
                        Claim c = mine.acquire("c-" + i);
                        switch (c.result()) {
                            case CLAIMED -> {
                                Integer previous = winners.putIfAbsent(c.messageId(), thread);
                                assertThat(previous).as("second winner for " + c.messageId()).isNull();
                                if (i % 2 == 0) {
                                    mine.confirm(c);
                                }
                            }
                            case ALREADY_CONFIRMED -> confirmedSeen.incrementAndGet();
                            case IN_PROGRESS -> inProgressSeen.incrementAndGet();
                            default -> throw new AssertionError(c);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : runs) {
                f.get(100, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(winners).hasSize(ids);
        assertThat(confirmedSeen.get() + inProgressSeen.get()).isEqualTo((threads - 1) * ids);
        assertThat(db.count("state = 1")).isEqualTo(ids / 2);
        assertThat(db.count("state = 0 AND attempts = 1")).isEqualTo(ids / 2);
    }

    @Test
    void sixteenThreadsRacingToTakeOverTheSameExpiredClaimsProduceOneWinnerEach() throws Exception {
        int threads = 16;
        int ids = 300;
        for (int i = 0; i < ids; i++) {
            store.acquire("t-" + i);
        }
        db.advanceTime(LEASE);
        CyclicBarrier barrier = new CyclicBarrier(threads);
        ConcurrentHashMap<String, Integer> winners = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                JdbcIdempotencyStore mine = db.store(Duration.ofHours(1), Duration.ofHours(2));
                runs.add(pool.submit(() -> {
                    for (int i = 0; i < ids; i++) {
                        barrier.await(10, TimeUnit.SECONDS);
                        Claim c = mine.acquire("t-" + i);
                        if (c.claimed()) {
                            assertThat(c.attempt()).isEqualTo(2);
                            assertThat(winners.putIfAbsent(c.messageId(), thread)).isNull();
                        } else {
                            assertThat(c.result()).isEqualTo(ClaimResult.IN_PROGRESS);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : runs) {
                f.get(100, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(winners).hasSize(ids);
    }
}

package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.StoreUnavailableException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The batch statements of the MariaDB / MySQL dialect on real MariaDB, each test twice: with MariaDB's statements
 * ({@code RETURNING}) and with the ones the dialect runs on MySQL 8 ({@code mysql = true}). A batch is one commit: on
 * MariaDB a claim batch and a confirm batch are one statement each; on MySQL a claim batch is the upsert and its
 * read-back in one transaction, a confirm batch one {@code UPDATE} and its commit. All or nothing; an id the column
 * cannot hold is that id's refusal; a batch that InnoDB aborted as a deadlock victim or after a lock wait timeout runs
 * again instead of failing; and many stores claiming the same ids at once on a small table (where an unhinted plan
 * would scan and lock every row) give each id one owner.
 */
@Timeout(180)
class MariaDbBatchIT {

    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofMinutes(10);
    static DialectFixture db;

    /** The statements the store ran, by their first word ({@code INSERT}, {@code SELECT}, ...), and its commits. */
    final List<String> statements = Collections.synchronizedList(new ArrayList<>());
    DataSource recording;

    @BeforeAll
    static void startDatabase() {
        db = DialectFixture.mariaDb(MariaDbBatchIT.class);
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
        recording = recording(db.pool, statements);
    }

    JdbcIdempotencyStore store(boolean mysql) {
        return store(mysql, recording);
    }

    JdbcIdempotencyStore store(boolean mysql, DataSource source) {
        return JdbcIdempotencyStore.builder(source).tableName(db.table).lease(LEASE).retention(RETENTION)
                .mysqlStatements(mysql).build();
    }

    static List<String> ids(String prefix, int n) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ids.add(prefix + i);
        }
        return ids;
    }

    List<String> ran(Runnable call) {
        statements.clear();
        call.run();
        return List.copyOf(statements);
    }

    // ------------------------------------------------------------------------------------------ one commit

    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void eachBatchIsOneStatementOrOneTransaction(boolean mysql) {
        JdbcIdempotencyStore store = store(mysql);
        store.acquire("warm-up"); // reads the dialect from the connection first
        List<Claim> claims = new ArrayList<>();
        assertThat(ran(() -> claims.addAll(store.acquireAll(ids("b-", 50)))))
                .as("claim batch").containsExactlyElementsOf(mysql ? List.of("INSERT", "SELECT", "COMMIT")
                        : List.of("INSERT"));
        assertThat(claims).allMatch(Claim::claimed).extracting(Claim::attempt).containsOnly(1);
        assertThat(ran(() -> assertThat(store.confirmAll(claims.subList(0, 30))).isEmpty()))
                .as("confirm batch, every lease held").containsExactlyElementsOf(mysql ? List.of("UPDATE", "COMMIT")
                        : List.of("INSERT"));
        assertThat(ran(() -> store.releaseAll(claims.subList(30, 50))))
                .as("release batch").containsExactly("SELECT", "UPDATE", "COMMIT");
        assertThat(db.count("state = 1")).isEqualTo(30);
        assertThat(db.count("state = 2 AND attempts = 1")).isEqualTo(20);

        // a lost lease among held ones: the same transaction locks the rows, decides, and records the rest
        Claim lapsed = store.acquire("lapsed");
        db.advanceTime(LEASE.plusSeconds(1));
        Claim takenOver = store(mysql).acquire("lapsed");
        assertThat(takenOver.attempt()).isEqualTo(2);
        List<Claim> fresh = store.acquireAll(List.of("f-1", "f-2"));
        List<Claim> batch = List.of(fresh.get(0), lapsed, fresh.get(1));
        assertThat(ran(() -> assertThat(store.confirmAll(batch)).containsExactly(lapsed)))
                .as("confirm batch with a lost lease").containsExactlyElementsOf(mysql
                        ? List.of("UPDATE", "SELECT", "INSERT", "COMMIT") : List.of("INSERT"));
        assertThat(db.count("id IN ('f-1', 'f-2', 'lapsed') AND state = 1")).isEqualTo(3);
        assertThat(db.column("SELECT attempts FROM " + db.quotedTable() + " WHERE id = 'lapsed'")).containsExactly(2);
    }

    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void aListLongerThanOneStatementTakesRunsAsOneTransaction(boolean mysql) {
        JdbcIdempotencyStore store = store(mysql);
        store.acquire("warm-up");
        List<String> ids = ids("long-", 1_200); // statements of 500, 500 and 200 ids
        List<Claim> claims = new ArrayList<>();
        assertThat(ran(() -> claims.addAll(store.acquireAll(ids)))).containsExactlyElementsOf(mysql
                ? List.of("INSERT", "INSERT", "INSERT", "SELECT", "SELECT", "SELECT", "COMMIT")
                : List.of("INSERT", "INSERT", "INSERT", "COMMIT"));
        assertThat(claims).extracting(Claim::messageId).containsExactlyElementsOf(ids);
        assertThat(claims).allMatch(Claim::claimed);
        assertThat(store.acquireAll(ids)).extracting(Claim::result).containsOnly(ClaimResult.IN_PROGRESS);
        assertThat(ran(() -> assertThat(store.confirmAll(claims.subList(0, 700))).isEmpty()))
                .containsExactlyElementsOf(mysql ? List.of("UPDATE", "UPDATE", "COMMIT")
                        : List.of("INSERT", "INSERT", "COMMIT"));
        assertThat(ran(() -> store.releaseAll(claims.subList(700, 1_200))))
                .containsExactly("SELECT", "UPDATE", "COMMIT");
        assertThat(db.count("id LIKE 'long-%' AND state = 1")).isEqualTo(700);
        assertThat(db.count("id LIKE 'long-%' AND state = 2 AND attempts = 1")).isEqualTo(500);
        assertThat(store.acquireAll(ids)).extracting(Claim::result)
                .containsOnly(ClaimResult.ALREADY_CONFIRMED, ClaimResult.CLAIMED);
    }

    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void aHundredMessagesCostTheServerAFewCommits(boolean mysql) throws Exception {
        JdbcIdempotencyStore store = store(mysql, db.pool);
        store.acquire("warm-up");
        long before = handlerCommits();
        List<Claim> claims = store.acquireAll(ids("h-", 100));
        assertThat(store.confirmAll(claims)).isEmpty();
        long commits = handlerCommits() - before;
        // what the benchmark counts: MariaDB's Handler_commit, a commit call at the end of every statement and of
        // every transaction (three statements per message before the batch statements)
        assertThat(commits).as("Handler_commit for 100 claims and confirms").isBetween(1L, mysql ? 5L : 2L);
    }

    // ------------------------------------------------------------------------------------------ all or nothing

    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void aBatchThatFailsWritesNothingForAnyOfItsIds(boolean mysql) {
        JdbcIdempotencyStore store = store(mysql);
        Claim held = store.acquire("held");
        db.update("ALTER TABLE " + db.quotedTable() + " ADD CONSTRAINT no_poison CHECK (id <> 'poison')");
        try {
            assertThatThrownBy(() -> store.acquireAll(List.of("good-1", "poison", "good-2")))
                    .isInstanceOf(StoreUnavailableException.class).isNotInstanceOf(InvalidMessageIdException.class);
            // the confirm of 'held' by the batch's UPDATE is rolled back with the failed insert of 'poison'
            assertThatThrownBy(() -> store.confirmAll(List.of(held, new Claim("poison", ClaimResult.CLAIMED, 1))))
                    .isInstanceOf(StoreUnavailableException.class);
            assertThat(db.count("id LIKE 'good-%' OR id = 'poison'")).as("nothing half-written").isZero();
            assertThat(db.count("id = 'held' AND state = 0")).as("held is not confirmed").isEqualTo(1);
        } finally {
            db.update("ALTER TABLE " + db.quotedTable() + " DROP CONSTRAINT no_poison");
        }
        assertThat(store.acquireAll(List.of("good-1", "good-2"))).extracting(Claim::attempt).containsExactly(1, 1);
        assertThat(store.confirmAll(List.of(held))).isEmpty();
    }

    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void anIdTheColumnCannotHoldIsRefusedForThatIdInEveryBatch(boolean mysql) {
        JdbcIdempotencyStore store = store(mysql);
        Claim held = store.acquire("ok-1");
        Claim other = store.acquire("ok-2");
        db.update("ALTER TABLE " + db.quotedTable() + " MODIFY id VARBINARY(12) NOT NULL");
        try {
            String tooLong = "much-too-long-for-twelve";
            assertThatThrownBy(() -> store.acquireAll(List.of("ok-3", tooLong)))
                    .isInstanceOfSatisfying(InvalidMessageIdException.class,
                            e -> assertThat(e.messageId()).isEqualTo(tooLong));
            assertThatThrownBy(() -> store.confirmAll(List.of(held, new Claim(tooLong, ClaimResult.CLAIMED, 1))))
                    .isInstanceOfSatisfying(InvalidMessageIdException.class,
                            e -> assertThat(e.messageId()).isEqualTo(tooLong));
            assertThat(store.isConfirmed("ok-1")).as("nothing confirmed").isFalse();
            assertThat(db.count("")).as("nothing claimed").isEqualTo(2);
            assertThat(store.confirmAll(List.of(held, other))).isEmpty();
        } finally {
            db.truncate();
            db.update("ALTER TABLE " + db.quotedTable() + " MODIFY id VARBINARY(2048) NOT NULL");
        }
    }

    // ------------------------------------------------------------------------------------------ InnoDB aborts

    /**
     * A batch that InnoDB chose as a deadlock victim runs again. The test's own transaction holds row b and has
     * written many rows (so that InnoDB rolls back the lighter batch, not it); the batch locks row a and waits for b;
     * the test's transaction then asks for a, and InnoDB finds the cycle.
     */
    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void aBatchChosenAsDeadlockVictimRunsAgain(boolean mysql) throws Exception {
        JdbcIdempotencyStore store = store(mysql, db.pool);
        store.releaseAll(store.acquireAll(List.of("dl-a", "dl-b")));
        store.confirmAll(store.acquireAll(ids("filler-", 300)));
        long deadlocks = status("Innodb_deadlocks");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Connection blocker = db.pool.getConnection()) {
            blocker.setAutoCommit(false);
            try (Statement s = blocker.createStatement()) {
                s.executeUpdate("UPDATE " + db.quotedTable() + " SET expires_at = expires_at + INTERVAL 1 SECOND"
                        + " WHERE id LIKE 'filler-%'");
                s.executeQuery("SELECT id FROM " + db.quotedTable() + " WHERE id = 'dl-b' FOR UPDATE").close();
            }
            Future<List<Claim>> batch = pool.submit(() -> store.acquireAll(List.of("dl-b", "dl-a")));
            Set<String> waiters = new HashSet<>();
            await().atMost(Duration.ofSeconds(60)).until(() -> collectWaiters(waiters) >= 1);
            try (Statement s = blocker.createStatement()) {
                // completes once InnoDB has rolled the batch back as the victim of the cycle
                s.executeQuery("SELECT id FROM " + db.quotedTable() + " WHERE id = 'dl-a' FOR UPDATE").close();
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> batch.isDone() || collectWaiters(waiters) >= 2);
            assertRunningAgain(batch);
            blocker.rollback();
            assertThat(batch.get(60, TimeUnit.SECONDS)).containsExactly(
                    new Claim("dl-b", ClaimResult.CLAIMED, 2), new Claim("dl-a", ClaimResult.CLAIMED, 2));
        } finally {
            pool.shutdownNow();
        }
        assertThat(status("Innodb_deadlocks")).as("InnoDB found the deadlock").isGreaterThan(deadlocks);
    }

    /**
     * A batch, and a single claim, that ran past {@code innodb_lock_wait_timeout} run again: here the store's
     * sessions wait 2 s, and the test's transaction holds the row until the store's second try is waiting.
     */
    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void aLockWaitTimeoutRunsAgain(boolean mysql) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.pool.getJdbcUrl());
        config.setUsername(db.pool.getUsername());
        config.setPassword(db.pool.getPassword());
        config.setMaximumPoolSize(2);
        config.setConnectionInitSql("SET SESSION innodb_lock_wait_timeout = 2");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (HikariDataSource impatient = new HikariDataSource(config)) {
            JdbcIdempotencyStore store = store(mysql, impatient);
            store.releaseAll(store.acquireAll(List.of("lw-a", "lw-b")));
            for (boolean single : new boolean[] {false, true}) {
                try (Connection blocker = db.pool.getConnection()) {
                    blocker.setAutoCommit(false);
                    try (Statement s = blocker.createStatement()) {
                        s.executeQuery("SELECT id FROM " + db.quotedTable() + " WHERE id = 'lw-b' FOR UPDATE")
                                .close();
                    }
                    Future<List<Claim>> claim = pool.submit(() -> single ? List.of(store.acquire("lw-b"))
                            : store.acquireAll(List.of("lw-a", "lw-b")));
                    Set<String> waiters = new HashSet<>();
                    await().atMost(Duration.ofSeconds(60))
                            .until(() -> claim.isDone() || collectWaiters(waiters) >= 2);
                    assertRunningAgain(claim);
                    blocker.commit();
                    List<Claim> claims = claim.get(60, TimeUnit.SECONDS);
                    assertThat(claims).as("single: " + single).allMatch(Claim::claimed);
                    store.releaseAll(claims);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    // ------------------------------------------------------------------------------------------ contention

    /**
     * Sixteen stores (owners) claim the same 40 ids per round at once, each in its own order, half of them in
     * batches and half one by one, on a table that small (where a plan that scans the table would lock every row):
     * exactly one CLAIMED per id. Then, all at once, the winners confirm their even ids and release their odd ones in
     * batches while every owner claims all 40 ids again in a batch: no confirm reports a lost lease, no even id is
     * claimed again, each odd id at most once. Nothing fails.
     */
    @ParameterizedTest(name = "mysql statements: {0}")
    @ValueSource(booleans = {false, true})
    void manyOwnersClaimingTheSameIdsAtOnceGiveEachIdOneOwner(boolean mysql) throws Exception {
        int owners = 16;
        int rounds = 20;
        int perRound = 40;
        List<JdbcIdempotencyStore> stores = new ArrayList<>();
        for (int i = 0; i < owners; i++) {
            stores.add(JdbcIdempotencyStore.builder(db.pool).tableName(db.table).lease(LEASE).retention(RETENTION)
                    .mysqlStatements(mysql).groupCommit(false).build());
        }
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        ExecutorService pool = Executors.newFixedThreadPool(owners);
        try {
            for (int round = 0; round < rounds; round++) {
                db.truncate();
                List<String> ids = ids("r" + round + "-", perRound);
                AtomicIntegerArray claimed = new AtomicIntegerArray(perRound);
                AtomicIntegerArray reclaimed = new AtomicIntegerArray(perRound);
                List<List<Claim>> won = new ArrayList<>();
                race(pool, owners, failures, o -> {
                    List<String> order = new ArrayList<>(ids);
                    Collections.shuffle(order, new Random(o * 7919L + ids.hashCode()));
                    List<Claim> answers = new ArrayList<>();
                    if (o % 2 == 0) {
                        answers.addAll(stores.get(o).acquireAll(order.subList(0, perRound / 2)));
                        answers.addAll(stores.get(o).acquireAll(order.subList(perRound / 2, perRound)));
                    } else {
                        for (String id : order) {
                            answers.add(stores.get(o).acquire(id));
                        }
                    }
                    List<Claim> mine = count(answers, claimed, failures);
                    synchronized (won) {
                        while (won.size() <= o) {
                            won.add(null);
                        }
                        won.set(o, mine);
                    }
                });
                for (int i = 0; i < perRound; i++) {
                    assertThat(claimed.get(i)).as("round %d: CLAIMED answers for id %d", round, i).isEqualTo(1);
                }
                race(pool, owners, failures, o -> {
                    List<Claim> confirm = new ArrayList<>();
                    List<Claim> release = new ArrayList<>();
                    for (Claim c : won.get(o)) {
                        (index(c) % 2 == 0 ? confirm : release).add(c);
                    }
                    List<String> order = new ArrayList<>(ids);
                    Collections.shuffle(order, new Random(o));
                    if (o % 2 == 0) {
                        List<Claim> lost = stores.get(o).confirmAll(confirm);
                        if (!lost.isEmpty()) {
                            failures.add(new AssertionError("confirmAll of live leases reported lost " + lost));
                        }
                        stores.get(o).releaseAll(release);
                        count(stores.get(o).acquireAll(order), reclaimed, failures);
                    } else {
                        count(stores.get(o).acquireAll(order), reclaimed, failures);
                        stores.get(o).releaseAll(release);
                        List<Claim> lost = stores.get(o).confirmAll(confirm);
                        if (!lost.isEmpty()) {
                            failures.add(new AssertionError("confirmAll of live leases reported lost " + lost));
                        }
                    }
                });
                assertThat(failures).as("round " + round).isEmpty();
                for (int i = 0; i < perRound; i++) {
                    assertThat(reclaimed.get(i)).as("round %d: claims of id %d after the first", round, i)
                            .isLessThanOrEqualTo(i % 2 == 0 ? 0 : 1);
                }
                assertThat(db.count("state = 1")).as("round %d: the even ids are confirmed", round)
                        .isEqualTo(perRound / 2);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Counts the CLAIMED answers per id index; @return them. */
    private static List<Claim> count(List<Claim> answers, AtomicIntegerArray into, ConcurrentLinkedQueue<Throwable>
            failures) {
        List<Claim> claims = new ArrayList<>();
        for (Claim c : answers) {
            if (c.claimed()) {
                into.incrementAndGet(index(c));
                claims.add(c);
            } else if (c.result() == ClaimResult.ALREADY_CONFIRMED && index(c) % 2 == 1) {
                failures.add(new AssertionError(c + ": nobody confirmed it"));
            }
        }
        return claims;
    }

    private static int index(Claim c) {
        return Integer.parseInt(c.messageId().substring(c.messageId().indexOf('-') + 1));
    }

    /** Runs {@code body} for owners 0..n-1 at once and waits for all; failures are collected. */
    private static void race(ExecutorService pool, int n, ConcurrentLinkedQueue<Throwable> failures, OwnerBody body)
            throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int o = 0; o < n; o++) {
            int owner = o;
            done.add(pool.submit(() -> {
                try {
                    start.await();
                    body.run(owner);
                } catch (Throwable t) {
                    failures.add(t);
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> f : done) {
            f.get(120, TimeUnit.SECONDS);
        }
        assertThat(failures).isEmpty();
    }

    /** What one owner does in a race. */
    @FunctionalInterface
    private interface OwnerBody {
        void run(int owner) throws Exception;
    }

    // ------------------------------------------------------------------------------------------ plumbing

    /** Fails with the call's own exception if it ended instead of waiting again after its first try was aborted. */
    private static void assertRunningAgain(Future<?> call) throws Exception {
        if (call.isDone()) {
            call.get(); // throws what the store threw
            throw new AssertionError("the call returned while the test's transaction still held its row");
        }
    }

    /**
     * Adds the ids of the store's claim transactions now waiting for a row lock (each try of a statement is a
     * transaction of its own); @return how many were seen so far.
     */
    private static int collectWaiters(Set<String> seen) throws SQLException {
        try (Connection c = db.pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT trx_id FROM information_schema.INNODB_TRX"
                     + " WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE 'INSERT%'")) {
            while (rs.next()) {
                seen.add(rs.getString(1));
            }
        }
        return seen.size();
    }

    private static long handlerCommits() throws SQLException {
        return status("Handler_commit");
    }

    private static long status(String name) throws SQLException {
        try (Connection c = db.pool.getConnection();
             PreparedStatement ps = c.prepareStatement("SHOW GLOBAL STATUS LIKE ?")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(2) : -1;
            }
        }
    }

    /** A DataSource whose connections record the first word of every statement they prepare, and each commit. */
    private static DataSource recording(DataSource target, List<String> into) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && (args == null || args.length == 0)) {
                        Connection c = target.getConnection();
                        return Proxy.newProxyInstance(Connection.class.getClassLoader(),
                                new Class<?>[] {Connection.class}, (p, m, a) -> {
                                    if (m.getName().equals("prepareStatement")) {
                                        into.add(((String) a[0]).strip().split("\\s+", 2)[0]
                                                .toUpperCase(Locale.ROOT));
                                    } else if (m.getName().equals("commit")) {
                                        into.add("COMMIT");
                                    }
                                    try {
                                        return m.invoke(c, a);
                                    } catch (InvocationTargetException e) {
                                        throw e.getCause();
                                    }
                                });
                    }
                    try {
                        return method.invoke(target, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}

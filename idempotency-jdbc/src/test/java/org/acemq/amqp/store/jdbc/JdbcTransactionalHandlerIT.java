package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore.TransactionalConfirm;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The transactional handler mode on real PostgreSQL: effects and confirm commit together, and two owners racing for
 * one id after a lease takeover never both commit effects. Time is moved by shifting the stored deadlines.
 */
@Timeout(180)
class JdbcTransactionalHandlerIT {

    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofHours(6);

    static PgFixture db;
    static String effects;
    JdbcIdempotencyStore storeA;
    JdbcIdempotencyStore storeB;
    ExecutorService threads;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcTransactionalHandlerIT.class);
        effects = db.schema.qualify("effects");
        db.update("CREATE TABLE " + effects + " (id text NOT NULL, owner text NOT NULL)"); // no key: doubles show
    }

    @AfterAll
    static void dropDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @BeforeEach
    void fresh() {
        db.truncate();
        db.update("TRUNCATE " + effects);
        storeA = db.store(LEASE, RETENTION);
        storeB = db.store(LEASE, RETENTION);
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    /** Work that inserts one effect row tagged with {@code tag}, then runs {@code then}. */
    static JdbcTransactionalHandler.TransactionalWork insertEffect(String tag, ThrowingRunnable then) {
        return (envelope, connection) -> {
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + effects + " VALUES (?, ?)")) {
                ps.setString(1, envelope.id());
                ps.setString(2, tag);
                ps.executeUpdate();
            }
            then.run();
        };
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    long effectsOf(String id) {
        return ((Number) db.column("SELECT count(*) FROM " + effects + " WHERE id = ?", id).get(0)).longValue();
    }

    /** @return "state owner attempts" of the id's row */
    String row(String id) {
        return (String) db.column("SELECT state || ' ' || coalesce(owner::text, '-') || ' ' || attempts FROM "
                + db.table + " WHERE id = ?", id).get(0);
    }

    Object xmin(String id) {
        return db.column("SELECT xmin::text || expires_at::text FROM " + db.table + " WHERE id = ?", id).get(0);
    }

    // -------------------------------------------------------------------------------------------- one owner

    @Test
    void workAndConfirmCommitTogetherAndTheRuntimesConfirmAfterwardsIsQuietAndWritesNothing() throws Exception {
        Claim claim = storeA.acquire("m1");
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(storeA, db.pool, insertEffect("A", () -> { }));

        handler.handle(new TestEnvelope("m1", claim.attempt()));

        assertThat(effectsOf("m1")).isEqualTo(1);
        assertThat(row("m1")).as("confirmed, marked with the claim that confirmed it")
                .isEqualTo("1 " + storeA.owner() + " 1");
        Object version = xmin("m1");
        assertThat(storeA.confirm(claim)).as("the runtime's confirm after the handler: true, so no warning")
                .isTrue();
        assertThat(xmin("m1")).as("and it wrote nothing (same row version, same expiry)").isEqualTo(version);
        assertThat(storeB.acquire("m1").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(storeB.release(claim)).isFalse();
        assertThat(storeA.release(claim)).as("a release after the commit does nothing").isFalse();
        assertThat(storeA.isConfirmed("m1")).isTrue();
    }

    @Test
    void theRuntimesConfirmIsQuietToo_whenGroupCommitRunsItThroughTheArrayStatement() throws Exception {
        JdbcIdempotencyStore grouped = db.builder().lease(LEASE).retention(RETENTION).owner(storeA.owner())
                .groupCommit(16, 1).arraySqlForSingletons(true).build();
        Claim claim = grouped.acquire("m1");
        Claim other = grouped.acquire("m2");
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(grouped, db.pool, insertEffect("A", () -> { }));

        handler.handle(new TestEnvelope("m1", claim.attempt()));

        assertThat(row("m1")).isEqualTo("1 " + storeA.owner() + " 1");
        Object version = xmin("m1");
        assertThat(grouped.confirm(claim)).as("same answer as the single-id statement: true").isTrue();
        assertThat(xmin("m1")).as("and it wrote nothing").isEqualTo(version);
        assertThat(row("m1")).as("the marker stays").isEqualTo("1 " + storeA.owner() + " 1");
        assertThat(grouped.confirm(other)).as("a plain held claim still confirms").isTrue();
        assertThat(row("m2")).isEqualTo("1 - 1");
        assertThat(storeB.acquire("m1").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void theRuntimesConfirmIsQuietToo_whenItConfirmsABatchWithConfirmAll() throws Exception {
        Claim m1 = storeA.acquire("m1");
        Claim m2 = storeA.acquire("m2");
        Claim m3 = storeA.acquire("m3");
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(storeA, db.pool, insertEffect("A", () -> { }));
        handler.handle(new TestEnvelope("m1", m1.attempt()));
        handler.handle(new TestEnvelope("m3", m3.attempt()));
        Object v1 = xmin("m1");
        Object v3 = xmin("m3");

        assertThat(storeA.confirmAll(List.of(m1, m2, m3))).as("every claim held: no warning").isEmpty();

        assertThat(xmin("m1")).as("the transactional confirms were not overwritten").isEqualTo(v1);
        assertThat(xmin("m3")).isEqualTo(v3);
        assertThat(row("m1")).isEqualTo("1 " + storeA.owner() + " 1");
        assertThat(row("m2")).as("a plain held claim is confirmed").isEqualTo("1 - 1");
        assertThat(effectsOf("m1")).isEqualTo(1);
        assertThat(storeB.acquireAll(List.of("m1", "m2", "m3"))).extracting(Claim::result)
                .containsOnly(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void aFailingWorkLeavesNeitherEffectsNorConfirmAndItsExceptionReachesTheRuntimeUnchanged() {
        Claim claim = storeA.acquire("m1");
        PermanentMessageException permanent = new PermanentMessageException("no such customer");
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(storeA, db.pool, insertEffect("A", () -> {
            throw permanent;
        }));

        assertThatThrownBy(() -> handler.handle(new TestEnvelope("m1", 1))).isSameAs(permanent);

        assertThat(effectsOf("m1")).isZero();
        assertThat(storeA.isConfirmed("m1")).isFalse();
        assertThat(row("m1")).as("still this owner's claim").isEqualTo("0 " + storeA.owner() + " 1");
        assertThat(storeA.release(claim)).as("the runtime's release works as usual").isTrue();
        assertThat(storeB.acquire("m1")).isEqualTo(new Claim("m1", ClaimResult.CLAIMED, 2));
    }

    @Test
    void aCrashBeforeTheCommitLeavesNeither() {
        storeA.acquire("m1");
        // the "crash": the database session of the work dies after the effect was written, before the commit
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(storeA, db.pool, (envelope, connection) -> {
            insertEffect("A", () -> { }).handle(envelope, connection);
            int pid;
            try (var rs = connection.createStatement().executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getInt(1);
            }
            db.column("SELECT pg_terminate_backend(?)", pid);
        });

        assertThatThrownBy(() -> handler.handle(new TestEnvelope("m1", 1))).isInstanceOf(SQLException.class);

        assertThat(effectsOf("m1")).isZero();
        assertThat(storeA.isConfirmed("m1")).isFalse();
        db.advanceTime(LEASE.plusSeconds(1));
        assertThat(storeB.acquire("m1")).as("the redelivery runs the work again").isEqualTo(
                new Claim("m1", ClaimResult.CLAIMED, 2));
    }

    @Test
    void workThatSwitchesAutoCommitOnFailsAndNothingIsConfirmed() {
        storeA.acquire("m1");
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(storeA, db.pool,
                (envelope, connection) -> connection.setAutoCommit(true));
        assertThatThrownBy(() -> handler.handle(new TestEnvelope("m1", 1)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("switched auto-commit on");
        assertThat(storeA.isConfirmed("m1")).isFalse();
    }

    @Test
    void aLapsedLeaseThatNobodyTookOverStillCommitsAndTheRuntimesConfirmIsQuiet() throws Exception {
        Claim claim = storeA.acquire("m1");
        db.advanceTime(LEASE.plusSeconds(1));
        JdbcTransactionalHandler.of(storeA, db.pool, insertEffect("A", () -> { }))
                .handle(new TestEnvelope("m1", 1));
        assertThat(effectsOf("m1")).isEqualTo(1);
        assertThat(storeA.confirm(claim)).isTrue();
        assertThat(storeB.acquire("m1").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    // ---------------------------------------------------------------------------------- two owners racing

    /**
     * A claims, starts the work and is paused inside it (no renewal); its lease runs out; B takes the id over
     * (attempt 2) and does the work too. {@code order} decides who reaches the confirm first: "A", "B", or "both"
     * (a barrier releases both at once).
     */
    Map<String, Object> race(String id, String order) throws Exception {
        Claim a = storeA.acquire(id);
        CountDownLatch aWorking = new CountDownLatch(1);
        CountDownLatch bWorking = new CountDownLatch(1);
        CountDownLatch goA = new CountDownLatch(1);
        CountDownLatch goB = new CountDownLatch(1);
        CyclicBarrier both = new CyclicBarrier(2);
        boolean together = order.equals("both");
        JdbcTransactionalHandler handlerA = JdbcTransactionalHandler.of(storeA, db.pool, insertEffect("A", () -> {
            aWorking.countDown();
            if (together) {
                both.await(30, TimeUnit.SECONDS);
            } else {
                goA.await();
            }
        }));
        JdbcTransactionalHandler handlerB = JdbcTransactionalHandler.of(storeB, db.pool, insertEffect("B", () -> {
            bWorking.countDown();
            if (together) {
                both.await(30, TimeUnit.SECONDS);
            } else {
                goB.await();
            }
        }));

        Future<?> runA = threads.submit(() -> {
            handlerA.handle(new TestEnvelope(id, a.attempt()));
            return null;
        });
        assertThat(aWorking.await(30, TimeUnit.SECONDS)).isTrue();
        db.advanceTime(LEASE.plusSeconds(1)); // A is paused past its lease
        Claim b = storeB.acquire(id);
        assertThat(b).as("B takes over").isEqualTo(new Claim(id, ClaimResult.CLAIMED, 2));
        Future<?> runB = threads.submit(() -> {
            handlerB.handle(new TestEnvelope(id, b.attempt()));
            return null;
        });
        assertThat(bWorking.await(30, TimeUnit.SECONDS)).isTrue();
        // both transactions now hold an uncommitted effect row for the id
        switch (order) {
            case "A" -> {
                goA.countDown();
                runA.get(30, TimeUnit.SECONDS);
                goB.countDown();
            }
            case "B" -> {
                goB.countDown();
                runB.get(30, TimeUnit.SECONDS);
                goA.countDown();
            }
            default -> { }
        }
        runA.get(30, TimeUnit.SECONDS); // neither fails: the loser rolls back and returns normally
        runB.get(30, TimeUnit.SECONDS);

        assertThat(effectsOf(id)).as(id + " (" + order + " first): effects committed exactly once").isEqualTo(1);
        String winner = (String) db.column("SELECT owner FROM " + effects + " WHERE id = ?", id).get(0);
        JdbcIdempotencyStore winnerStore = winner.equals("A") ? storeA : storeB;
        assertThat(row(id)).as("the store row names the winner")
                .isEqualTo("1 " + winnerStore.owner() + " 2");

        // the runtimes' confirms after the handlers: idempotent, and they leave the winner's row alone
        Object version = xmin(id);
        assertThat(storeB.confirm(b)).as("B's confirm is quiet only if B won").isEqualTo(winner.equals("B"));
        assertThat(storeA.confirm(a)).as("A's lease was taken over: never reported as held").isFalse();
        assertThat(xmin(id)).isEqualTo(version);
        assertThat(storeA.release(a)).isFalse();
        assertThat(storeB.release(b)).isFalse();
        assertThat(storeA.acquire(id).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        return Map.of("winner", winner);
    }

    @Test
    void afterATakeoverThePausedOwnerConfirmingFirstWinsAndTheNewOwnerRollsBack() throws Exception {
        assertThat(race("first-a", "A")).containsEntry("winner", "A");
    }

    @Test
    void afterATakeoverTheNewOwnerConfirmingFirstWinsAndThePausedOwnerRollsBack() throws Exception {
        assertThat(race("first-b", "B")).containsEntry("winner", "B");
    }

    @Test
    void twoOwnersConfirmingAtTheSameMomentNeverBothCommitEffects() throws Exception {
        List<Object> winners = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            winners.add(race("together-" + i, "both").get("winner"));
        }
        assertThat(winners).hasSize(25).allMatch(w -> w.equals("A") || w.equals("B"));
    }

    @Test
    void atRepeatableReadTheLoserFailsWithASerializationErrorAndStillNothingIsCommittedTwice() throws Exception {
        Claim a = storeA.acquire("rr");
        db.advanceTime(LEASE.plusSeconds(1));
        Claim b = storeB.acquire("rr");
        Connection first = db.pool.getConnection();
        Connection second = db.pool.getConnection();
        try {
            for (Connection c : List.of(first, second)) {
                c.setAutoCommit(false);
                c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
                c.createStatement().execute("SELECT 1"); // both snapshots taken before either confirms
            }
            assertThat(storeA.confirmInTransaction(first, a)).isEqualTo(TransactionalConfirm.CONFIRMED_LEASE_LOST);
            first.commit();
            assertThatThrownBy(() -> storeB.confirmInTransaction(second, b)).isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("40001"));
            second.rollback();
        } finally {
            first.close();
            second.close();
        }
        assertThat(row("rr")).isEqualTo("1 " + storeA.owner() + " 2");
    }

    @Test
    void aSecondConfirmWaitsForTheFirstTransactionAndWinsOnlyIfTheFirstRollsBack() throws Exception {
        Claim a = storeA.acquire("m1");
        db.advanceTime(LEASE.plusSeconds(1));
        Claim b = storeB.acquire("m1");
        try (Connection first = db.pool.getConnection(); Connection second = db.pool.getConnection()) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            assertThat(storeA.confirmInTransaction(first, a)).isEqualTo(TransactionalConfirm.CONFIRMED_LEASE_LOST);
            int secondPid;
            try (var rs = second.createStatement().executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                secondPid = rs.getInt(1);
            }
            Future<TransactionalConfirm> waiting = threads.submit(() -> storeB.confirmInTransaction(second, b));
            await("the second confirm blocks on the row lock").atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(10)).until(() -> "Lock".equals(
                            db.column("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", secondPid).get(0)));
            assertThat(waiting).as("blocked on the first transaction's row lock").isNotDone();
            first.rollback();
            assertThat(waiting.get(30, TimeUnit.SECONDS)).as("the first rolled back: the second wins")
                    .isEqualTo(TransactionalConfirm.CONFIRMED);
            second.commit();
        }
        assertThat(row("m1")).isEqualTo("1 " + storeB.owner() + " 2");
        assertThat(storeB.confirm(b)).isTrue();
    }

    @Test
    void aConfirmInTransactionNeedsAutoCommitOff() throws SQLException {
        Claim a = storeA.acquire("m1");
        try (Connection c = db.pool.getConnection()) {
            assertThatThrownBy(() -> storeA.confirmInTransaction(c, a)).isInstanceOf(IllegalStateException.class);
        }
        assertThat(storeA.isConfirmed("m1")).isFalse();
    }

    /** The minimum an {@link Envelope} needs for these tests. */
    record TestEnvelope(String id, int attempt) implements Envelope {
        @Override
        public Object messageId() {
            return id;
        }

        @Override
        public String address() {
            return "orders";
        }

        @Override
        public Object body() {
            return "body";
        }

        @Override
        public <T> T body(Class<T> type) {
            return type.cast(body());
        }

        @Override
        public Object correlationId() {
            return null;
        }

        @Override
        public String subject() {
            return null;
        }

        @Override
        public String contentType() {
            return null;
        }

        @Override
        public String replyTo() {
            return null;
        }

        @Override
        public Instant creationTime() {
            return null;
        }

        @Override
        public Map<String, Object> applicationProperties() {
            return Map.of();
        }

        @Override
        public Map<String, Object> annotations() {
            return Map.of();
        }

        @Override
        public long deliveryCount() {
            return 0;
        }

        @Override
        public boolean firstAcquirer() {
            return false;
        }
    }
}

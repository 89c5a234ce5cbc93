package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.store.jdbc.internal.GroupCommit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Group commit against real PostgreSQL: many threads through batches, repeated ids inside one batch, a failing batch,
 * interruption. Batches are made deterministic by holding the only in-flight slot with a statement that waits for a
 * row lock the test holds: everything submitted meanwhile queues up and becomes the next batch.
 */
@Timeout(180)
class JdbcGroupCommitIT {

    static final Duration LEASE = Duration.ofHours(1);
    static final Duration RETENTION = Duration.ofHours(2);

    static PgFixture db;
    /** Connections taken from the pool: with group commit, one per statement. */
    final AtomicInteger statements = new AtomicInteger();
    final AtomicReference<SQLException> failConnections = new AtomicReference<>();
    DataSource counting;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcGroupCommitIT.class);
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
        counting = db.instrumented(statements, null, failConnections);
    }

    JdbcIdempotencyStore.Builder builder() {
        return JdbcIdempotencyStore.builder(counting).tableName(db.table).lease(LEASE).retention(RETENTION);
    }

    // --------------------------------------------------------------------------------------------- hammering

    @Test
    void thirtyTwoThreadsOnOverlappingIdsClaimEachExactlyOnceAndRecordEveryConfirm() throws Exception {
        int threads = 32;
        int ids = 3_000;
        // two owners (two "processes"), two batches in flight each: batches of both overlap on the same ids
        JdbcIdempotencyStore a = builder().groupCommit(128, 2).build();
        JdbcIdempotencyStore b = builder().groupCommit(128, 2).build();
        ConcurrentHashMap<String, Integer> winners = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicInteger operations = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                JdbcIdempotencyStore mine = t % 2 == 0 ? a : b;
                runs.add(pool.submit(() -> {
                    // every thread visits every id, in its own order: ids meet in batches of either owner
                    List<Integer> order = new ArrayList<>();
                    for (int i = 0; i < ids; i++) {
                        order.add(i);
                    }
                    Collections.shuffle(order, new Random(thread));
                    for (int i : order) {
                        Claim c = mine.acquire("h-" + i);
                        operations.incrementAndGet();
                        if (c.claimed()) {
                            if (winners.putIfAbsent(c.messageId(), thread) != null) {
                                problems.add("second CLAIMED for " + c.messageId());
                            }
                            if (c.attempt() != 1) {
                                problems.add(c + " has attempt " + c.attempt());
                            }
                            if (!mine.confirm(c)) {
                                problems.add("confirm of live " + c + " answered false");
                            }
                            operations.incrementAndGet();
                        } else if (c.result() == ClaimResult.ALREADY_CONFIRMED && winners.get(c.messageId()) == null) {
                            problems.add(c + " before anybody claimed it");
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : runs) {
                f.get(150, TimeUnit.SECONDS); // any StoreUnavailableException (a deadlock, say) fails here
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(problems).isEmpty();
        assertThat(winners).hasSize(ids);
        assertThat(db.count("state = 1 AND attempts = 1")).as("every confirm recorded").isEqualTo(ids);
        assertThat(db.count("")).isEqualTo(ids);
        System.out.printf("group commit: %d operations in %d statements (%.1f per statement)%n", operations.get(),
                statements.get(), operations.get() / (double) statements.get());
        assertThat(statements.get()).as("calls were coalesced").isLessThan(operations.get() / 2);
    }

    // ---------------------------------------------------------------------------- one deterministic batch

    /** Holds the store's only batch slot until {@link Blocker#close()}: a claim of an id whose row the test locks. */
    final class Blocker implements AutoCloseable {
        final Connection tx;
        final Future<Claim> leader;
        final ExecutorService threads = Executors.newCachedThreadPool();
        final List<Thread> started = new CopyOnWriteList();
        final AtomicInteger submitted = new AtomicInteger();
        volatile boolean leaderInterruptedAfterwards;

        Blocker(JdbcIdempotencyStore store) throws Exception {
            store.confirm("blocker"); // the row exists ...
            tx = db.pool.getConnection();
            tx.setAutoCommit(false);
            try (Statement s = tx.createStatement()) { // ... and the test holds its lock
                s.execute("SELECT 1 FROM " + store.tableName() + " WHERE id = 'blocker' FOR UPDATE");
            }
            leader = submit(() -> {
                Claim c = store.acquire("blocker");
                leaderInterruptedAfterwards = Thread.currentThread().isInterrupted();
                return c;
            });
            await("the leader waits for the row lock").atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20)).until(() -> lockWaiters() > 0);
        }

        <T> Future<T> submit(Callable<T> task) {
            submitted.incrementAndGet();
            return threads.submit(() -> {
                started.add(Thread.currentThread());
                return task.call();
            });
        }

        /**
         * Waits until every submitted task has started and is queued for the next batch: the leader still waits for
         * the row lock (in native socket code, so RUNNABLE; checked through pg_stat_activity), every other task
         * waits for its group-commit request (on the request's monitor), which it only does after queueing its request.
         */
        void awaitParkedOrBlocked() {
            await("tasks queue up behind the blocked leader").atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20)).until(() -> {
                        List<Thread> tasks = List.copyOf(started);
                        if (tasks.size() != submitted.get() || lockWaiters() == 0) {
                            return false;
                        }
                        for (Thread t : tasks.subList(1, tasks.size())) {
                            if (t.getState() != Thread.State.WAITING || !waitsInLane(t)) {
                                return false;
                            }
                        }
                        return true;
                    });
        }

        /** @return whether the thread waits for its group-commit request's answer */
        private static boolean waitsInLane(Thread t) {
            for (StackTraceElement frame : t.getStackTrace()) {
                if (frame.getClassName().equals(GroupCommit.Request.class.getName())
                        && frame.getMethodName().equals("await")) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void close() throws Exception {
            if (tx.isClosed()) {
                return;
            }
            tx.rollback();
            tx.close();
            assertThat(leader.get(30, TimeUnit.SECONDS).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            threads.shutdown();
        }
    }

    /** A list safe for the few concurrent adds of the blocker's tasks. */
    static final class CopyOnWriteList extends java.util.concurrent.CopyOnWriteArrayList<Thread> {
        private static final long serialVersionUID = 1L;
    }

    @Test
    void repeatedIdsInOneBatchGetExactlyTheAnswersOfSerialCalls() throws Exception {
        JdbcIdempotencyStore store = builder().groupCommit(128, 1).build();
        JdbcIdempotencyStore peer = builder().groupCommit(false).build();
        peer.confirm("done");
        Claim other = peer.acquire("other-owner");
        Claim stale = store.acquire("stale");
        assertThat(store.release(stale)).isTrue();
        Claim current = store.acquire("stale");
        assertThat(current.attempt()).isEqualTo(2);
        Claim toConfirm = store.acquire("to-confirm");
        Claim toRelease = store.acquire("to-release");

        List<Future<Claim>> dup = new ArrayList<>();
        List<Future<Claim>> done = new ArrayList<>();
        List<Future<Boolean>> confirms = new ArrayList<>();
        List<Future<Boolean>> releases = new ArrayList<>();
        List<Future<Boolean>> staleReleases = new ArrayList<>();
        Future<Claim> otherOwner;
        int before;
        try (Blocker blocker = new Blocker(store)) {
            before = statements.get();
            for (int i = 0; i < 6; i++) {
                dup.add(blocker.submit(() -> store.acquire("dup")));
                done.add(blocker.submit(() -> store.acquire("done")));
                confirms.add(blocker.submit(() -> store.confirm(toConfirm)));
                releases.add(blocker.submit(() -> store.release(toRelease)));
                staleReleases.add(blocker.submit(() -> store.release(stale)));
            }
            releases.add(blocker.submit(() -> store.release(current)));
            otherOwner = blocker.submit(() -> store.acquire("other-owner"));
            blocker.awaitParkedOrBlocked();
            assertThat(statements.get()).as("all queued, nothing sent yet").isEqualTo(before);
        }
        List<Claim> dupAnswers = new ArrayList<>();
        for (Future<Claim> f : dup) {
            dupAnswers.add(f.get(30, TimeUnit.SECONDS));
        }
        assertThat(dupAnswers).filteredOn(Claim::claimed).containsExactly(new Claim("dup", ClaimResult.CLAIMED, 1));
        assertThat(dupAnswers).filteredOn(c -> !c.claimed()).hasSize(5)
                .allMatch(c -> c.equals(new Claim("dup", ClaimResult.IN_PROGRESS, 1)));
        for (Future<Claim> f : done) {
            assertThat(f.get(30, TimeUnit.SECONDS)).isEqualTo(new Claim("done", ClaimResult.ALREADY_CONFIRMED, 0));
        }
        assertThat(otherOwner.get(30, TimeUnit.SECONDS)).isEqualTo(new Claim("other-owner", ClaimResult.IN_PROGRESS, 1));
        assertThat(count(confirms, true)).as("one confirm held the lease, the repeats found it confirmed").isEqualTo(1);
        assertThat(count(releases, true)).as("to-release once, and the current lease of 'stale'").isEqualTo(2);
        assertThat(count(staleReleases, true)).as("a stale lease is never released").isZero();
        // one batch per operation: acquire, confirm(Claim), release(Claim)
        assertThat(statements.get() - before).isEqualTo(3);
        assertThat(store.isConfirmed("to-confirm")).isTrue();
        assertThat(store.acquire("to-release")).isEqualTo(new Claim("to-release", ClaimResult.CLAIMED, 2));
        assertThat(store.acquire("stale")).isEqualTo(new Claim("stale", ClaimResult.CLAIMED, 3));
        assertThat(peer.confirm(other)).isTrue();
    }

    /** @return backends waiting for a lock: the leader's statement, blocked on the row the test holds */
    private static int lockWaiters() {
        return ((Number) db.column("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").get(0))
                .intValue();
    }

    private static int count(List<Future<Boolean>> futures, boolean value) throws Exception {
        int n = 0;
        for (Future<Boolean> f : futures) {
            if (f.get(30, TimeUnit.SECONDS) == value) {
                n++;
            }
        }
        return n;
    }

    @Test
    void aFailingBatchFailsEveryCallerInItAndWritesNothing() throws Exception {
        // a CHECK constraint that one id violates: the batch statement fails in the middle
        db.update("ALTER TABLE " + db.table + " ADD CONSTRAINT no_poison CHECK (id <> 'poison')");
        try {
            JdbcIdempotencyStore store = builder().groupCommit(128, 1).build();
            List<String> ids = List.of("good-1", "good-2", "poison", "good-3");
            List<Future<Claim>> answers = new ArrayList<>();
            try (Blocker blocker = new Blocker(store)) {
                for (String id : ids) {
                    answers.add(blocker.submit(() -> store.acquire(id)));
                }
                blocker.awaitParkedOrBlocked();
            }
            for (int i = 0; i < ids.size(); i++) {
                String id = ids.get(i);
                Future<Claim> f = answers.get(i);
                assertThatThrownBy(() -> f.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(
                        StoreUnavailableException.class).cause()
                        .hasMessageContaining("acquire('" + id + "') failed [SQLState 23514] in a group-committed "
                                + "batch of 4 requests")
                        .hasCauseInstanceOf(SQLException.class);
            }
            assertThat(db.count("id LIKE 'good-%'")).as("nothing half-written").isZero();
            assertThat(store.acquire("good-1").claimed()).isTrue();
        } finally {
            db.update("ALTER TABLE " + db.table + " DROP CONSTRAINT no_poison");
        }
    }

    @Test
    void anIdPostgresRefusesFailsOnlyItsOwnCallerAndTheRestOfTheBatchIsAnsweredAsUsual() throws Exception {
        // a table whose id column was narrowed, as a hand-written migration might do: PostgreSQL refuses ids over 40
        // characters with a data error (SQLState 22001), which fails the whole batch statement
        String narrow = db.schema.qualify("acemq_narrow_ids");
        JdbcIdempotencyStore store = builder().tableName(narrow).groupCommit(128, 1).build();
        store.createSchema();
        db.update("ALTER TABLE " + narrow + " ALTER COLUMN id TYPE varchar(40)");
        String tooLong = "s:" + "x".repeat(60);
        List<String> ids = List.of("good-1", tooLong, "good-2", "good-1");
        List<Future<Claim>> answers = new ArrayList<>();
        try (Blocker blocker = new Blocker(store)) {
            for (String id : ids) {
                answers.add(blocker.submit(() -> store.acquire(id)));
            }
            blocker.awaitParkedOrBlocked();
        }
        assertThat(answers.get(0).get(30, TimeUnit.SECONDS)).isEqualTo(new Claim("good-1", ClaimResult.CLAIMED, 1));
        assertThatThrownBy(() -> answers.get(1).get(30, TimeUnit.SECONDS)).cause()
                .isInstanceOfSatisfying(InvalidMessageIdException.class, e -> {
                    assertThat(e.messageId()).isEqualTo(tooLong);
                    assertThat(e.getCause()).isInstanceOf(SQLException.class);
                    assertThat(((SQLException) e.getCause()).getSQLState()).isEqualTo("22001");
                });
        assertThat(answers.get(2).get(30, TimeUnit.SECONDS)).isEqualTo(new Claim("good-2", ClaimResult.CLAIMED, 1));
        assertThat(answers.get(3).get(30, TimeUnit.SECONDS)).as("the repeat still sees the first copy's claim")
                .isEqualTo(new Claim("good-1", ClaimResult.IN_PROGRESS, 1));
        assertThat(db.column("SELECT id FROM " + narrow + " ORDER BY id"))
                .containsExactly("blocker", "good-1", "good-2");
        assertThat(store.acquire("good-3").claimed()).as("the store goes on").isTrue();
    }

    @Test
    void anUnreachableDatabaseFailsEveryCallerOfTheBatch() throws Exception {
        JdbcIdempotencyStore store = builder().groupCommit(128, 1).build();
        List<Future<Boolean>> answers = new ArrayList<>();
        try (Blocker blocker = new Blocker(store)) {
            for (int i = 0; i < 5; i++) {
                String id = "c-" + i;
                answers.add(blocker.submit(() -> store.confirm(new Claim(id, ClaimResult.CLAIMED, 1))));
            }
            blocker.awaitParkedOrBlocked();
            failConnections.set(new SQLException("connection refused", "08001"));
        }
        for (Future<Boolean> f : answers) {
            assertThatThrownBy(() -> f.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(StoreUnavailableException.class)
                    .cause().hasMessageContaining("[SQLState 08001]");
        }
        failConnections.set(null);
        assertThat(db.count("id LIKE 'c-%'")).isZero();
    }

    @Test
    void interruptionWithdrawsAQueuedRequestAndLetsAnExecutingOneFinish() throws Exception {
        JdbcIdempotencyStore store = builder().groupCommit(128, 1).build();
        AtomicReference<Thread> queuedThread = new AtomicReference<>();
        Future<Object> queued;
        try (Blocker blocker = new Blocker(store)) {
            queued = blocker.submit(() -> {
                queuedThread.set(Thread.currentThread());
                try {
                    return store.acquire("queued");
                } catch (StoreUnavailableException e) {
                    return e.getCause() instanceof InterruptedException && Thread.currentThread().isInterrupted()
                            ? "withdrawn" : e;
                }
            });
            blocker.awaitParkedOrBlocked();
            queuedThread.get().interrupt();
            assertThat(queued.get(10, TimeUnit.SECONDS)).as("answered while the batch ahead still runs")
                    .isEqualTo("withdrawn");
            blocker.started.get(0).interrupt(); // the leader, executing its statement
            await("an executing statement is not abandoned").during(Duration.ofMillis(200))
                    .atMost(Duration.ofSeconds(10)).until(() -> !blocker.leader.isDone() && lockWaiters() > 0);
            blocker.close();
            assertThat(blocker.leaderInterruptedAfterwards).as("the interrupt flag is set again").isTrue();
        }
        assertThat(db.count("id = 'queued'")).as("nothing written for the withdrawn request").isZero();
        assertThat(store.acquire("queued")).isEqualTo(new Claim("queued", ClaimResult.CLAIMED, 1));
    }

    @Test
    void aLoneCallerRunsAtOnceWithTheSingleIdStatement() {
        JdbcIdempotencyStore store = builder().groupCommit(true).build();
        assertThat(store.groupCommitEnabled()).isTrue();
        assertThat(builder().build().groupCommitEnabled()).as("on by default").isTrue();
        int before = statements.get();
        Claim c = store.acquire("lone");
        assertThat(store.confirm(c)).isTrue();
        store.confirm("lone-2");
        assertThat(store.release(store.acquire("lone-3"))).isTrue();
        assertThat(statements.get() - before).isEqualTo(5);
        assertThat(builder().groupCommit(false).build().groupCommitEnabled()).isFalse();
    }
}

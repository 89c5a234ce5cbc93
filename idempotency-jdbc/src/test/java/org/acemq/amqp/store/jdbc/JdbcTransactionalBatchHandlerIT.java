package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandlerIT.TestEnvelope;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The transactional batch handler on real PostgreSQL: a batch's rows and all its confirms commit together (the runtime's
 * confirms afterwards write nothing), a failing work leaves neither, named items stay unconfirmed while the rest
 * commits, messages another owner confirmed are left out of the work, and an owner that took a message over while the
 * batch held it waits for the batch and then finds it done. Time is moved by shifting the stored deadlines.
 */
@Timeout(180)
class JdbcTransactionalBatchHandlerIT {

    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofHours(6);

    static PgFixture db;
    static String effects;
    JdbcIdempotencyStore storeA;
    JdbcIdempotencyStore storeB;
    ExecutorService threads;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcTransactionalBatchHandlerIT.class);
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

    /** Work that bulk-inserts one effect row per message, tagged {@code tag}, records what it got, then runs then. */
    static JdbcTransactionalBatchHandler.TransactionalBatchWork bulkInsert(String tag, List<List<String>> got,
                                                                         Then then) {
        return (batch, connection) -> {
            List<String> ids = new ArrayList<>();
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + effects + " VALUES (?, ?)")) {
                for (Envelope e : batch) {
                    ids.add(e.id());
                    ps.setString(1, e.id());
                    ps.setString(2, tag);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            got.add(ids);
            then.run(batch, connection);
        };
    }

    interface Then {
        void run(List<Envelope> batch, Connection connection) throws Exception;
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

    /** Claims the ids with store A; @return their envelopes, as the runtime hands them to a batch handler */
    List<Envelope> claimed(String... ids) {
        List<Envelope> batch = new ArrayList<>();
        for (String id : ids) {
            Claim c = storeA.acquire(id);
            assertThat(c.result()).isEqualTo(ClaimResult.CLAIMED);
            batch.add(new TestEnvelope(id, c.attempt()));
        }
        return batch;
    }

    /** Another consumer takes {@code id} over (the lease lapses) and confirms it. */
    void confirmedElsewhere(String id) {
        db.advanceTime(LEASE.plusSeconds(1));
        Claim b = storeB.acquire(id);
        assertThat(b.result()).isEqualTo(ClaimResult.CLAIMED);
        assertThat(storeB.confirm(b)).isTrue();
    }

    @Test
    void theBatchsRowsAndAllItsConfirmsCommitTogetherAndTheRuntimesConfirmsWriteNothing() throws Exception {
        List<Envelope> batch = claimed("m1", "m2", "m3");
        List<List<String>> got = new CopyOnWriteArrayList<>();
        JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", got, (b, c) -> { })).handle(batch);

        assertThat(got).containsExactly(List.of("m1", "m2", "m3"));
        for (String id : List.of("m1", "m2", "m3")) {
            assertThat(effectsOf(id)).isEqualTo(1);
            assertThat(row(id)).as("confirmed, marked with the claim that confirmed it")
                    .isEqualTo("1 " + storeA.owner() + " 1");
        }
        Object v2 = xmin("m2");
        List<Claim> claims = batch.stream().map(e -> new Claim(e.id(), ClaimResult.CLAIMED, e.attempt())).toList();
        assertThat(storeA.confirmAll(claims)).as("the runtime's confirms: every claim held, no warning").isEmpty();
        assertThat(xmin("m2")).as("and they wrote nothing").isEqualTo(v2);
        assertThat(storeB.acquireAll(List.of("m1", "m2", "m3"))).extracting(Claim::result)
                .containsOnly(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void theBatchsSendsCommitToTheOutboxWithItsRowsAndConfirms() throws Exception {
        storeA.createSchema(); // the outbox table beside the store's
        List<CapturingEnvelope> batch = new ArrayList<>();
        for (String id : List.of("s1", "s2", "s3")) {
            batch.add(new CapturingEnvelope(id, storeA.acquire(id).attempt()));
        }
        List<List<String>> got = new ArrayList<>();
        JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", got, (b, c) -> {
            for (Envelope e : b) {
                CapturingEnvelope ce = (CapturingEnvelope) e;
                ce.send("events", "first of " + e.id());
                ce.send("events", "second of " + e.id());
            }
        })).handle(List.copyOf(batch));
        for (CapturingEnvelope e : batch) {
            assertThat(storeA.pendingOutbox(e.id())).as("the sends of %s, in order", e.id())
                    .extracting(OutboxContract::text).containsExactly("first of " + e.id(), "second of " + e.id());
            assertThat(e.stored).as("outboxStored after the commit").isEqualTo(1);
            assertThat(effectsOf(e.id())).isEqualTo(1);
        }

        CapturingEnvelope rolledBack = new CapturingEnvelope("s4", storeA.acquire("s4").attempt());
        assertThatThrownBy(() -> JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", got, (b, c) -> {
            ((CapturingEnvelope) b.get(0)).send("events", "never");
            throw new IllegalStateException("test: the batch fails");
        })).handle(List.of(rolledBack))).hasMessage("test: the batch fails");
        assertThat(storeA.pendingOutbox("s4")).as("a rolled back batch writes no outbox row").isEmpty();
        assertThat(rolledBack.stored).isZero();
    }

    @Test
    void queuedOutboxMarksRideTheNextBatchsCommitAndABatchThatRollsBackLeavesThemQueued() throws Exception {
        JdbcIdempotencyStore store = db.builder().lease(LEASE).retention(RETENTION)
                .outboxMarkFlushDelay(Duration.ofMinutes(10)).build(); // its flusher never runs here
        store.createSchema();
        List<CapturingEnvelope> sending = new ArrayList<>();
        for (String id : List.of("s1", "s2")) {
            sending.add(new CapturingEnvelope(id, store.acquire(id).attempt()));
        }
        List<List<String>> got = new ArrayList<>();
        JdbcTransactionalBatchHandler.of(store, db.pool, bulkInsert("A", got, (b, c) -> {
            for (Envelope e : b) {
                ((CapturingEnvelope) e).send("events", "of " + e.id());
            }
        })).handle(List.copyOf(sending));
        List<OutboxEntry> sent = new ArrayList<>();
        sending.forEach(e -> sent.addAll(e.sent()));
        store.outboxDispatched(sent);
        String outbox = store.outboxTableName();
        assertThat(store.queuedOutboxMarks()).isEqualTo(2);

        TestEnvelope failing = new TestEnvelope("f1", store.acquire("f1").attempt());
        assertThatThrownBy(() -> JdbcTransactionalBatchHandler.of(store, db.pool, bulkInsert("A", got, (b, c) -> {
            throw new IllegalStateException("test: the batch fails");
        })).handle(List.of(failing))).hasMessage("test: the batch fails");
        assertThat(store.queuedOutboxMarks()).as("still queued").isEqualTo(2);
        assertThat(db.column("SELECT count(*) FROM " + outbox + " WHERE dispatched_at IS NOT NULL").get(0))
                .isEqualTo(0L);

        TestEnvelope next = new TestEnvelope("n1", store.acquire("n1").attempt());
        JdbcTransactionalBatchHandler.of(store, db.pool, bulkInsert("A", got, (b, c) -> { })).handle(List.of(next));
        assertThat(store.queuedOutboxMarks()).isZero();
        assertThat(db.column("SELECT count(*) FROM " + outbox + " WHERE dispatched_at IS NOT NULL").get(0))
                .as("written in the batch's transaction").isEqualTo(2L);
    }

    @Test
    void aFailingWorkLeavesNeitherEffectsNorConfirmsAndItsExceptionReachesTheRuntimeUnchanged() {
        List<Envelope> batch = claimed("m1", "m2");
        PermanentMessageException permanent = new PermanentMessageException("the file is malformed");
        JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(storeA, db.pool,
                bulkInsert("A", new ArrayList<>(), (b, c) -> {
                    throw permanent;
                }));

        assertThatThrownBy(() -> handler.handle(batch)).isSameAs(permanent);

        for (String id : List.of("m1", "m2")) {
            assertThat(effectsOf(id)).isZero();
            assertThat(row(id)).as("still this owner's claim").isEqualTo("0 " + storeA.owner() + " 1");
        }
    }

    @Test
    void itemsTheWorkNamesStayUnconfirmedWhileTheRestCommitsAndTheirIndicesAreTheBatchs() throws Exception {
        List<Envelope> batch = claimed("m1", "m2", "m3", "m4");
        // m2 was confirmed by another consumer already: the work gets m1, m3, m4 and names m4 (its index 2) as failed
        confirmedElsewhere("m2");
        IllegalStateException busy = new IllegalStateException("test: m4's downstream is busy");
        List<List<String>> got = new CopyOnWriteArrayList<>();
        JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(storeA, db.pool,
                (b, connection) -> {
                    List<Envelope> ok = b.subList(0, 2);
                    bulkInsert("A", got, (x, c) -> { }).handle(ok, connection);
                    got.add(b.stream().map(Envelope::id).toList());
                    throw new BatchItemsFailedException(2, busy);
                });

        assertThatThrownBy(() -> handler.handle(batch)).isInstanceOfSatisfying(BatchItemsFailedException.class,
                e -> assertThat(e.failures()).as("indices in the whole batch").containsExactly(Map.entry(3, busy)));

        assertThat(got.get(1)).as("the work got the messages not done yet").containsExactly("m1", "m3", "m4");
        assertThat(effectsOf("m1")).isEqualTo(1);
        assertThat(effectsOf("m3")).isEqualTo(1);
        assertThat(effectsOf("m2")).as("left out: done by another consumer").isZero();
        assertThat(effectsOf("m4")).isZero();
        assertThat(row("m1")).isEqualTo("1 " + storeA.owner() + " 1");
        assertThat(row("m3")).isEqualTo("1 " + storeA.owner() + " 1");
        assertThat(row("m4")).as("the failed item keeps its claim, for the runtime to release")
                .isEqualTo("0 " + storeA.owner() + " 1");
    }

    @Test
    void aBatchWhoseMessagesAreAllDoneRunsNoWorkAndReturnsNormally() throws Exception {
        List<Envelope> batch = claimed("m1", "m2");
        confirmedElsewhere("m1");
        confirmedElsewhere("m2");
        List<List<String>> got = new CopyOnWriteArrayList<>();
        JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", got, (b, c) -> { })).handle(batch);
        assertThat(got).isEmpty();
        assertThat(effectsOf("m1") + effectsOf("m2")).isZero();
    }

    @Test
    void anIndexOutsideTheWorksListFailsTheWholeBatchAndNothingCommits() {
        List<Envelope> batch = claimed("m1", "m2");
        BatchItemsFailedException wrong = new BatchItemsFailedException(5, new IllegalStateException("test"));
        JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(storeA, db.pool,
                bulkInsert("A", new ArrayList<>(), (b, c) -> {
                    throw wrong;
                }));
        assertThatThrownBy(() -> handler.handle(batch)).isSameAs(wrong);
        assertThat(effectsOf("m1") + effectsOf("m2")).isZero();
        assertThat(storeA.isConfirmed("m1")).isFalse();
    }

    @Test
    void workThatSwitchesAutoCommitOnFailsTheBatch() {
        List<Envelope> batch = claimed("m1");
        JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(storeA, db.pool,
                (b, connection) -> connection.setAutoCommit(true));
        assertThatThrownBy(() -> handler.handle(batch)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("switched auto-commit on");
        assertThat(storeA.isConfirmed("m1")).isFalse();
    }

    @Test
    void aLapsedLeaseThatNobodyTookOverStillCommits() throws Exception {
        List<Envelope> batch = claimed("m1", "m2");
        db.advanceTime(LEASE.plusSeconds(1));
        JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", new ArrayList<>(), (b, c) -> { }))
                .handle(batch);
        assertThat(effectsOf("m1")).isEqualTo(1);
        assertThat(storeB.acquire("m2").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    /**
     * B took m1 over (A's lease had lapsed) just before A's batch started; A's batch locks m1 and is paused in its work;
     * B's transactional handler reaches its confirm and waits for the batch's lock; the batch commits (m1's lease was
     * lost, nobody had confirmed it), and B finds m1 confirmed and rolls its work back. One effect.
     */
    @Test
    void anOwnerThatTookAMessageOverWaitsForTheBatchHoldingItAndFindsItDone() throws Exception {
        List<Envelope> batch = claimed("m1", "m2");
        db.advanceTime(LEASE.plusSeconds(1));
        Claim b = storeB.acquire("m1");
        assertThat(b).as("B takes over").isEqualTo(new Claim("m1", ClaimResult.CLAIMED, 2));
        CountDownLatch working = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        Future<?> a = threads.submit(() -> {
            JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", new ArrayList<>(), (x, c) -> {
                working.countDown();
                go.await();
            })).handle(batch);
            return null;
        });
        assertThat(working.await(30, TimeUnit.SECONDS)).isTrue();
        Future<?> runB = threads.submit(() -> {
            JdbcTransactionalHandler.of(storeB, db.pool, (envelope, connection) -> {
                try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + effects + " VALUES (?, ?)")) {
                    ps.setString(1, envelope.id());
                    ps.setString(2, "B");
                    ps.executeUpdate();
                }
            }).handle(new TestEnvelope("m1", b.attempt()));
            return null;
        });
        await("B's confirm waits for the batch").during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                .until(() -> !runB.isDone());
        go.countDown();
        a.get(30, TimeUnit.SECONDS);
        runB.get(30, TimeUnit.SECONDS); // B returns normally: the work is done, by the batch
        assertThat(effectsOf("m1")).as("effects committed exactly once").isEqualTo(1);
        assertThat(db.column("SELECT owner FROM " + effects + " WHERE id = ?", "m1")).containsExactly("A");
        assertThat(row("m1")).as("confirmed by the batch, B's attempt kept").isEqualTo("1 " + storeA.owner() + " 2");
        assertThat(effectsOf("m2")).isEqualTo(1);
    }

    @Test
    void concurrentBatchesOverTheSameMessagesInOppositeOrderQueueInsteadOfDeadlocking() throws Exception {
        List<Envelope> forward = claimed("k1", "k2", "k3", "k4");
        db.advanceTime(LEASE.plusSeconds(1));
        List<Envelope> backward = new ArrayList<>();
        for (String id : List.of("k4", "k3", "k2", "k1")) {
            Claim c = storeB.acquire(id);
            backward.add(new TestEnvelope(id, c.attempt()));
        }
        CountDownLatch bothIn = new CountDownLatch(2);
        Then meet = (b, c) -> {
            bothIn.countDown();
            bothIn.await(2, TimeUnit.SECONDS); // the second waits on the first's locks, so this times out there
        };
        Future<?> a = threads.submit(() -> {
            JdbcTransactionalBatchHandler.of(storeA, db.pool, bulkInsert("A", new ArrayList<>(), meet)).handle(forward);
            return null;
        });
        Future<?> b = threads.submit(() -> {
            JdbcTransactionalBatchHandler.of(storeB, db.pool, bulkInsert("B", new ArrayList<>(), meet))
                    .handle(backward);
            return null;
        });
        a.get(60, TimeUnit.SECONDS);
        b.get(60, TimeUnit.SECONDS);
        for (String id : List.of("k1", "k2", "k3", "k4")) {
            assertThat(effectsOf(id)).as("effects of %s", id).isEqualTo(1);
        }
    }
}

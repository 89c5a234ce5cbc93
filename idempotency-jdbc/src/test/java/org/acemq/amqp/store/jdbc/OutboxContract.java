package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The transactional outbox of {@link JdbcIdempotencyStore} and {@link JdbcTransactionalHandler} on one database
 * product: the write in the handler's transaction, the reads, the sweep and its holds, failures, marks, the purge, a
 * missing table and an unreachable database. Subclasses give the database. Time moves by shifting stored times back.
 */
@Timeout(180)
abstract class OutboxContract {

    static final Duration LEASE = Duration.ofSeconds(30);
    static final Duration RETENTION = Duration.ofHours(1);
    static final Duration MIN_AGE = Duration.ofSeconds(10);

    /** @return the test class's database */
    abstract OutboxDb db();

    JdbcIdempotencyStore store;
    JdbcIdempotencyStore peer;
    ExecutorService threads;

    @BeforeEach
    void fresh() {
        db().truncate();
        store = db().builder().lease(LEASE).retention(RETENTION).build();
        peer = db().builder().lease(LEASE).retention(RETENTION).build();
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    /** Work that inserts an effect row tagged {@code tag}, sends {@code bodies} to "events", then runs {@code then}. */
    JdbcTransactionalHandler.TransactionalWork work(String tag, List<?> bodies, ThrowingRunnable then) {
        return (envelope, connection) -> {
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + db().effects + " VALUES (?, ?)")) {
                ps.setString(1, envelope.id());
                ps.setString(2, tag);
                ps.executeUpdate();
            }
            for (Object body : bodies) {
                ((CapturingEnvelope) envelope).send("events", body);
            }
            then.run();
        };
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** Claims {@code id} on {@code store} and runs {@code work} in a transactional handler on the pool. */
    CapturingEnvelope handle(JdbcIdempotencyStore on, String id, JdbcHandlerWork work) throws Exception {
        Claim claim = on.acquire(id);
        assertThat(claim.claimed()).as("claim of " + id).isTrue();
        CapturingEnvelope envelope = new CapturingEnvelope(id, claim.attempt());
        JdbcTransactionalHandler.of(on, db().pool, work.work()).handle(envelope);
        return envelope;
    }

    /** A transactional work, as a value. */
    interface JdbcHandlerWork {
        JdbcTransactionalHandler.TransactionalWork work();
    }

    CapturingEnvelope sendOnly(String id, Object... bodies) throws Exception {
        return handle(store, id, () -> work("A", List.of(bodies), () -> { }));
    }

    static String text(OutboxEntry e) {
        return new String(e.message(), java.nio.charset.StandardCharsets.UTF_8);
    }

    // ----------------------------------------------------------------------------------------------- schema

    @Test
    void createSchemaCreatesTheOutboxTableNextToTheStoresAndListsItsDdl() {
        assertThat(store.outboxTableName()).endsWith(JdbcIdempotencyStore.DEFAULT_OUTBOX_TABLE_NAME);
        assertThat(store.toString()).contains("outbox=" + store.outboxTableName());
        store.createSchema();
        store.createSchema();
        List<String> ddl = store.schemaStatements();
        assertThat(ddl).anySatisfy(s -> assertThat(s).contains("CREATE TABLE").contains("acemq_outbox"))
                .anySatisfy(s -> assertThat(s).contains("CREATE TABLE").contains("acemq_idempotency"))
                .allSatisfy(s -> assertThat(s).containsAnyOf("acemq_idempotency", "acemq_outbox"));
        assertThat(db().outboxRows("")).isZero();
        assertThat(store.outboxStatus()).isEqualTo(new OutboxStore.Status(0, null, 0));
    }

    // ----------------------------------------------------------------------------------------------- write

    @Test
    void theHandlersSendsAreWrittenWithItsEffectsAndConfirmInOneTransaction() throws Exception {
        Instant before = Instant.now().minusSeconds(5);
        CapturingEnvelope envelope = sendOnly("m1", "first", "second", "third");

        assertThat(db().effectsOf("m1")).isEqualTo(1);
        assertThat(store.isConfirmed("m1")).isTrue();
        assertThat(envelope.stored).as("outboxStored after the commit").isEqualTo(1);
        assertThat(envelope.discarded).isZero();
        List<OutboxEntry> pending = store.pendingOutbox("m1");
        assertThat(pending).as("byte for byte, in position order").isEqualTo(envelope.sent()).hasSize(3);
        assertThat(pending).extracting(OutboxEntry::messageId).containsExactly("m1/0", "m1/1", "m1/2");
        assertThat(pending).extracting(OutboxContract::text).containsExactly("first", "second", "third");
        assertThat(peer.pendingOutbox("m1")).as("any instance reads it").isEqualTo(pending);
        assertThat(store.pendingOutbox("other")).isEmpty();
        OutboxStore.Status status = store.outboxStatus();
        assertThat(status.pending()).isEqualTo(3);
        assertThat(status.failing()).isZero();
        assertThat(status.oldestPending()).isAfter(before).isBefore(Instant.now().plusSeconds(5));
        assertThat(store.confirm(new Claim("m1", ClaimResult.CLAIMED, 1))).as("the runtime's confirm is quiet")
                .isTrue();
    }

    @Test
    void allOfAHandlersSendsAreOneStatementAndAHandlerThatSendsNothingRunsNone() throws Exception {
        int none = statementsOfAHandlerSending(0);
        int one = statementsOfAHandlerSending(1);
        int fifty = statementsOfAHandlerSending(50);
        assertThat(one).as("one insert more than sending nothing").isEqualTo(none + 1);
        assertThat(fifty).as("fifty sends: still one insert").isEqualTo(one);
        assertThat(db().outboxRows("")).isEqualTo(51);
    }

    int statementsOfAHandlerSending(int messages) throws Exception {
        String id = "count-" + messages;
        Claim claim = store.acquire(id);
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < messages; i++) {
            bodies.add("body " + i);
        }
        AtomicInteger statements = new AtomicInteger();
        JdbcTransactionalHandler.of(store, db().instrumented(statements, false), work("A", bodies, () -> { }))
                .handle(new CapturingEnvelope(id, claim.attempt()));
        assertThat(db().outboxRows("incoming_key = ?", id)).isEqualTo(messages);
        return statements.get();
    }

    @Test
    void aCommitThatFailsAfterTheInsertLeavesNoOutboxRowsNoEffectsAndNoConfirm() throws Exception {
        Claim claim = store.acquire("m1");
        CapturingEnvelope envelope = new CapturingEnvelope("m1", claim.attempt());
        JdbcTransactionalHandler failing = JdbcTransactionalHandler.of(store,
                db().instrumented(new AtomicInteger(), true), work("A", List.of("a", "b"), () -> { }));

        assertThatThrownBy(() -> failing.handle(envelope)).isInstanceOf(SQLException.class)
                .hasMessageContaining("commit failed");

        assertThat(db().outboxRows("")).isZero();
        assertThat(db().effectsOf("m1")).isZero();
        assertThat(store.isConfirmed("m1")).isFalse();
        assertThat(envelope.stored + envelope.discarded).as("a throw: the runtime discards, not the handler")
                .isZero();
        assertThat(store.outboxStatus().pending()).isZero();
    }

    @Test
    void aWorkThatThrowsAfterSendingWritesNothing() throws Exception {
        Claim claim = store.acquire("m1");
        CapturingEnvelope envelope = new CapturingEnvelope("m1", claim.attempt());
        IllegalStateException boom = new IllegalStateException("boom");
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(store, db().pool,
                work("A", List.of("a"), () -> {
                    throw boom;
                }));
        assertThatThrownBy(() -> handler.handle(envelope)).isSameAs(boom);
        assertThat(db().outboxRows("")).isZero();
        assertThat(envelope.stored + envelope.discarded).isZero();
        assertThat(store.release(claim)).isTrue();
    }

    @Test
    void entriesOfAnotherKeyOrARepeatedPositionAreRefusedAndNothingIsWritten() throws Exception {
        Claim claim = store.acquire("m1");
        CapturingEnvelope wrongKey = new CapturingEnvelope("m1", claim.attempt()) {
            @Override
            public synchronized List<OutboxEntry> outboxEntries() {
                return List.of(new OutboxEntry("m2", 0, "m2/0", "events", new byte[] {1}));
            }
        };
        JdbcTransactionalHandler handler = JdbcTransactionalHandler.of(store, db().pool, work("A", List.of(), () -> { }));
        assertThatThrownBy(() -> handler.handle(wrongKey)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("another incoming message");
        CapturingEnvelope twice = new CapturingEnvelope("m1", claim.attempt()) {
            @Override
            public synchronized List<OutboxEntry> outboxEntries() {
                OutboxEntry e = new OutboxEntry("m1", 0, "m1/0", "events", new byte[] {1});
                return List.of(e, e);
            }
        };
        assertThatThrownBy(() -> handler.handle(twice)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("position 0");
        CapturingEnvelope nul = new CapturingEnvelope("m1", claim.attempt()) {
            @Override
            public synchronized List<OutboxEntry> outboxEntries() {
                return List.of(new OutboxEntry("m1", 0, "m1/0", "ev\u0000ents", new byte[] {1}));
            }
        };
        assertThatThrownBy(() -> handler.handle(nul)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("address holds a NUL character");
        assertThat(db().outboxRows("")).isZero();
        assertThat(db().effectsOf("m1")).as("the transaction was rolled back").isZero();
        assertThat(store.isConfirmed("m1")).isFalse();
    }

    @Test
    void messagesOfSeveralMebibytesRoundTripByteExact() throws Exception {
        Random random = new Random(42);
        byte[] five = new byte[5 * 1024 * 1024];
        byte[] three = new byte[3 * 1024 * 1024];
        byte[] small = new byte[17];
        random.nextBytes(five);
        random.nextBytes(three);
        random.nextBytes(small);
        CapturingEnvelope envelope = sendOnly("big", five, three, three, small, new byte[0]);

        List<OutboxEntry> pending = store.pendingOutbox("big");
        assertThat(pending).hasSize(5).isEqualTo(envelope.sent());
        assertThat(pending.get(0).message()).isEqualTo(five);
        assertThat(pending.get(4).message()).isEmpty();
        db().ageOutbox(MIN_AGE);
        assertThat(store.pendingOutbox(MIN_AGE, 10)).as("the sweep reads the same bytes").isEqualTo(envelope.sent());
    }

    // ----------------------------------------------------------------------------------------- two owners

    /**
     * A claims, works and sends, and is paused before its confirm; its lease runs out; B takes over, works and sends
     * other content under the same positions; {@code aFirst} decides who confirms first.
     */
    void race(boolean aFirst) throws Exception {
        Claim a = store.acquire("r");
        CountDownLatch aWorking = new CountDownLatch(1);
        CountDownLatch goA = new CountDownLatch(1);
        CountDownLatch bWorking = new CountDownLatch(1);
        CountDownLatch goB = new CountDownLatch(1);
        CapturingEnvelope envA = new CapturingEnvelope("r", a.attempt());
        Future<?> runA = threads.submit(() -> {
            JdbcTransactionalHandler.of(store, db().pool, work("A", List.of("from A 0", "from A 1"), () -> {
                aWorking.countDown();
                goA.await();
            })).handle(envA);
            return null;
        });
        assertThat(aWorking.await(30, TimeUnit.SECONDS)).isTrue();
        db().advanceStoreTime(LEASE.plusSeconds(1));
        Claim b = peer.acquire("r");
        assertThat(b).as("B takes over").isEqualTo(new Claim("r", ClaimResult.CLAIMED, 2));
        CapturingEnvelope envB = new CapturingEnvelope("r", b.attempt());
        Future<?> runB = threads.submit(() -> {
            JdbcTransactionalHandler.of(peer, db().pool, work("B", List.of("from B 0", "from B 1", "from B 2"),
                    () -> {
                        bWorking.countDown();
                        goB.await();
                    })).handle(envB);
            return null;
        });
        assertThat(bWorking.await(30, TimeUnit.SECONDS)).isTrue();
        (aFirst ? goA : goB).countDown();
        (aFirst ? runA : runB).get(30, TimeUnit.SECONDS);
        (aFirst ? goB : goA).countDown();
        runA.get(30, TimeUnit.SECONDS); // the loser rolls back and returns normally
        runB.get(30, TimeUnit.SECONDS);

        CapturingEnvelope winner = aFirst ? envA : envB;
        CapturingEnvelope loser = aFirst ? envB : envA;
        assertThat(db().effectsOf("r")).isEqualTo(1);
        assertThat(store.pendingOutbox("r")).as("the winner's messages only").isEqualTo(winner.sent());
        assertThat(db().outboxRows("")).isEqualTo(winner.sent().size());
        assertThat(winner.stored).isEqualTo(1);
        assertThat(winner.discarded).isZero();
        assertThat(loser.discarded).as("the loser's sends are discarded").isEqualTo(1);
        assertThat(loser.stored).isZero();
    }

    @Test
    void whenThePausedOwnerConfirmsFirstTheNewOwnerWritesNoOutboxRows() throws Exception {
        race(true);
    }

    @Test
    void whenTheNewOwnerConfirmsFirstThePausedOwnerWritesNoOutboxRows() throws Exception {
        race(false);
    }

    @Test
    void aHandlerRunAgainAfterItsMessageWasForgottenReplacesItsRowsPendingAgain() throws Exception {
        CapturingEnvelope first = sendOnly("m1", "old 0", "old 1");
        store.outboxDispatched(first.sent());
        store.outboxFailed(first.sent().get(1), "ignored: already dispatched");
        db().advanceStoreTime(RETENTION.plus(LEASE).plusSeconds(1)); // the store forgot m1
        CapturingEnvelope second = handle(store, "m1", () -> work("A2", List.of("new 0"), () -> { }));

        assertThat(second.stored).isEqualTo(1);
        assertThat(store.pendingOutbox("m1")).as("position 0 replaced and pending again; position 1 stays dispatched")
                .isEqualTo(second.sent());
        assertThat(db().outboxRows("attempts = 0 AND last_error IS NULL")).isEqualTo(2);
    }

    // ----------------------------------------------------------------------------------------------- sweep

    @Test
    void theSweepHandsOutTheOldestRowsPastTheMinimumAgeAndHoldsThemForTheLease() throws Exception {
        for (int i = 0; i < 5; i++) {
            sendOnly("k" + i, "k" + i + " 0", "k" + i + " 1");
            db().ageOutbox(Duration.ofSeconds(100 - i * 10), "k" + i); // k0 oldest ... k4 newest
        }
        sendOnly("young", "too young for the sweep");

        List<OutboxEntry> first = store.pendingOutbox(MIN_AGE, 3);
        // oldest first; the two rows of one key were written at the same time, so they come in either order
        assertThat(first).extracting(e -> keyOf(e.messageId())).containsExactly("k0", "k0", "k1");
        assertThat(first.subList(0, 2)).extracting(OutboxEntry::messageId).containsExactlyInAnyOrder("k0/0", "k0/1");
        String third = first.get(2).messageId();
        assertThat(third).isIn("k1/0", "k1/1");
        List<OutboxEntry> second = peer.pendingOutbox(MIN_AGE, 100);
        List<String> rest = new java.util.ArrayList<>(List.of("k1/0", "k1/1", "k2/0", "k2/1", "k3/0", "k3/1", "k4/0",
                "k4/1"));
        rest.remove(third);
        assertThat(second).as("held rows are skipped, by every instance")
                .extracting(OutboxEntry::messageId).containsExactlyInAnyOrderElementsOf(rest);
        assertThat(second.get(0).messageId()).as("oldest first").startsWith("k1/");
        assertThat(second.get(second.size() - 1).messageId()).startsWith("k4/");
        assertThat(store.pendingOutbox(MIN_AGE, 100)).as("everything old enough is held").isEmpty();
        assertThat(store.pendingOutbox("k0")).as("a duplicate's read ignores holds").hasSize(2);
        assertThat(store.outboxStatus().pending()).as("held rows are still pending").isEqualTo(11);

        db().ageOutbox(LEASE.plusSeconds(1));
        List<OutboxEntry> again = store.pendingOutbox(MIN_AGE, 100);
        assertThat(again).as("the holds ended: all again, oldest first, young included now that it is old enough")
                .extracting(e -> keyOf(e.messageId()))
                .containsExactly("k0", "k0", "k1", "k1", "k2", "k2", "k3", "k3", "k4", "k4", "young");
        assertThat(again).extracting(OutboxEntry::messageId).containsExactlyInAnyOrder("k0/0", "k0/1", "k1/0", "k1/1",
                "k2/0", "k2/1", "k3/0", "k3/1", "k4/0", "k4/1", "young/0");
        assertThatThrownBy(() -> store.pendingOutbox(MIN_AGE, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit must be >= 1");
        assertThatThrownBy(() -> store.pendingOutbox(Duration.ofSeconds(-1), 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minAge must be >= 0");
    }

    /** @return the incoming key of a message-id of {@link #sendOnly} ({@code key/position}) */
    private static String keyOf(String messageId) {
        return messageId.substring(0, messageId.lastIndexOf('/'));
    }

    @Test
    void aSweepSkipsRowsAnotherSweepHasLockedInsteadOfWaitingForThem() throws Exception {
        sendOnly("locked", "held by someone");
        sendOnly("free", "free for this sweep");
        db().ageOutbox(MIN_AGE.plusSeconds(1));
        try (Connection tx = db().pool.getConnection()) {
            tx.setAutoCommit(false);
            try (PreparedStatement ps = tx.prepareStatement("SELECT message_id FROM " + db().outbox
                    + " WHERE incoming_key = 'locked' FOR UPDATE")) {
                ps.executeQuery().close();
            }
            Future<List<OutboxEntry>> sweep = threads.submit(() -> peer.pendingOutbox(MIN_AGE, 10));
            assertThat(sweep.get(20, TimeUnit.SECONDS)).as("not blocked by the locked row")
                    .extracting(OutboxEntry::messageId).containsExactly("free/0");
            tx.rollback();
        }
        assertThat(store.pendingOutbox(MIN_AGE, 10)).extracting(OutboxEntry::messageId).containsExactly("locked/0");
    }

    @Test
    void sweepersOfTwoProcessesSweepingAtOnceNeverHandOutTheSameRow() throws Exception {
        int rows = 120;
        for (int i = 0; i < rows / 4; i++) {
            sendOnly("s" + i, "0", "1", "2", "3");
        }
        db().ageOutbox(MIN_AGE.plusSeconds(1));
        ConcurrentHashMap<String, Integer> handedOut = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> twice = new ConcurrentLinkedQueue<>();
        List<Future<?>> sweepers = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            JdbcIdempotencyStore mine = t % 2 == 0 ? store : peer;
            int thread = t;
            sweepers.add(threads.submit(() -> {
                while (true) {
                    List<OutboxEntry> got = mine.pendingOutbox(MIN_AGE, 7);
                    if (got.isEmpty()) {
                        return null;
                    }
                    for (OutboxEntry e : got) {
                        if (handedOut.putIfAbsent(e.messageId(), thread) != null) {
                            twice.add(e.messageId());
                        }
                    }
                }
            }));
        }
        for (Future<?> f : sweepers) {
            f.get(120, TimeUnit.SECONDS);
        }
        assertThat(twice).as("no row handed out twice").isEmpty();
        assertThat(handedOut).hasSize(rows);
    }

    @Test
    void aFailedDispatchIsCountedKeepsABoundedErrorAndWaitsOneLeaseBeforeTheSweepRetriesIt() throws Exception {
        CapturingEnvelope envelope = sendOnly("f", "a", "b");
        db().ageOutbox(MIN_AGE.plusSeconds(1));
        OutboxEntry a = envelope.sent().get(0);
        String long1 = "rejected: amqp:not-found \u0000 no such address; " + "x".repeat(5_000);
        store.outboxFailed(a, long1);
        store.outboxFailed(a, "rejected again \uD800 unpaired");

        assertThat(db().column("SELECT attempts FROM " + db().outbox + " WHERE message_id = 'f/0'"))
                .extracting(v -> ((Number) v).intValue()).containsExactly(2);
        assertThat((String) db().column("SELECT last_error FROM " + db().outbox + " WHERE message_id = 'f/0'").get(0))
                .isEqualTo("rejected again \uFFFD unpaired");
        store.outboxFailed(a, long1);
        String kept = (String) db().column("SELECT last_error FROM " + db().outbox + " WHERE message_id = 'f/0'")
                .get(0);
        assertThat(kept).hasSize(1_000).startsWith("rejected: amqp:not-found \uFFFD no such address; xxx");
        OutboxStore.Status status = store.outboxStatus();
        assertThat(status.pending()).isEqualTo(2);
        assertThat(status.failing()).isEqualTo(1);
        assertThat(store.pendingOutbox(MIN_AGE, 10)).as("the failed row waits").extracting(OutboxEntry::messageId)
                .containsExactly("f/1");
        assertThat(store.pendingOutbox("f")).as("a duplicate's read still finds it").hasSize(2);
        db().ageOutbox(LEASE.plusSeconds(1));
        assertThat(store.pendingOutbox(MIN_AGE, 10)).as("the hold of the failure and the sweep's have ended")
                .extracting(OutboxEntry::messageId).containsExactlyInAnyOrder("f/0", "f/1");
        store.outboxDispatched(List.of(a));
        assertThat(store.outboxStatus()).as("dispatched: no longer failing")
                .isEqualTo(new OutboxStore.Status(1, store.outboxStatus().oldestPending(), 0));
        store.outboxFailed(new OutboxEntry("nobody", 0, "x", "y", new byte[0]), null);
    }

    // ------------------------------------------------------------------------------------- marks and purge

    @Test
    void marksLeaveDispatchedRowsForTheRetentionAndThePurgeDeletesOnlyThoseOlderThanIt() throws Exception {
        CapturingEnvelope one = sendOnly("p1", "a", "b", "c");
        CapturingEnvelope two = sendOnly("p2", "d");
        store.outboxDispatched(List.of(one.sent().get(0), one.sent().get(2), two.sent().get(0)));
        store.outboxDispatched(List.of(one.sent().get(0))); // again: not an error
        store.outboxDispatched(List.of(new OutboxEntry("gone", 3, "gone/3", "events", new byte[0])));
        store.outboxDispatched(List.of());

        assertThat(store.pendingOutbox("p1")).extracting(OutboxEntry::messageId).containsExactly("p1/1");
        assertThat(store.pendingOutbox("p2")).isEmpty();
        assertThat(store.outboxStatus().pending()).isEqualTo(1);
        assertThat(db().outboxRows("dispatched_at IS NOT NULL")).isEqualTo(3);
        assertThat(store.purgeExpired()).as("dispatched, but not for the retention yet").isZero();

        db().ageOutbox(RETENTION.minusSeconds(60));
        assertThat(store.purgeExpired()).isZero();
        db().ageOutbox(Duration.ofSeconds(61));
        assertThat(store.purgeExpired()).as("the three dispatched rows").isEqualTo(3);
        assertThat(db().outboxRows("")).as("the pending row, older than the retention, is kept").isEqualTo(1);
        assertThat(store.pendingOutbox("p1")).extracting(OutboxEntry::messageId).containsExactly("p1/1");
    }

    @Test
    void thePurgeDeletesDispatchedRowsInBatches() throws Exception {
        JdbcIdempotencyStore small = db().builder().lease(LEASE).retention(RETENTION).purgeBatchSize(3)
                .purgePause(Duration.ZERO).build();
        List<OutboxEntry> all = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            all.addAll(sendOnly("b" + i, "0", "1").sent());
        }
        small.outboxDispatched(all.subList(0, 7));
        small.outboxStatus(); // writes the queued marks, before time moves
        db().ageOutbox(RETENTION.plusSeconds(1));
        assertThat(small.purgeExpired()).isEqualTo(7);
        assertThat(db().outboxRows("")).isEqualTo(1);
    }

    // --------------------------------------------------------------------------------- missing and unreachable

    @Test
    void withoutAnOutboxTableTheReadsAreEmptyThePurgeSkipsItAndASendingHandlerFailsNamingTheTable() throws Exception {
        JdbcIdempotencyStore noOutbox = db().builder().lease(LEASE).retention(RETENTION)
                .outboxTableName("no_such_outbox").build();
        assertThat(noOutbox.pendingOutbox("m1")).isEmpty();
        assertThat(noOutbox.pendingOutbox(MIN_AGE, 10)).isEmpty();
        assertThat(noOutbox.outboxStatus()).isEqualTo(new OutboxStore.Status(0, null, 0));
        noOutbox.outboxDispatched(List.of(new OutboxEntry("m1", 0, "m1/0", "events", new byte[0])));
        noOutbox.outboxFailed(new OutboxEntry("m1", 0, "m1/0", "events", new byte[0]), "x");
        assertThat(noOutbox.purgeExpired()).isZero();

        assertThatThrownBy(() -> handle(noOutbox, "m1", () -> work("A", List.of("a"), () -> { })))
                .isInstanceOf(SQLException.class).hasMessageContaining("no_such_outbox")
                .hasMessageContaining("createSchema()");
        assertThat(db().effectsOf("m1")).isZero();
        assertThat(noOutbox.isConfirmed("m1")).isFalse();
        CapturingEnvelope silent = handle(noOutbox, "m2", () -> work("A", List.of(), () -> { }));
        assertThat(silent.stored).as("a handler that sends nothing does not need the table").isEqualTo(1);
        assertThat(noOutbox.isConfirmed("m2")).isTrue();
    }

    @Test
    void anUnreachableDatabaseIsStoreUnavailableNamingTheOutbox() {
        DataSource down = (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    throw new SQLException("Connection refused (test)", "08001");
                });
        JdbcIdempotencyStore unreachable = db().builder(down).dialect(db().dialect).build();
        OutboxEntry e = new OutboxEntry("m1", 0, "m1/0", "events", new byte[0]);
        List<org.assertj.core.api.ThrowableAssert.ThrowingCallable> calls = List.of(
                () -> unreachable.pendingOutbox("m1"), () -> unreachable.pendingOutbox(MIN_AGE, 1),
                () -> unreachable.outboxFailed(e, "x"), unreachable::outboxStatus);
        for (var call : calls) {
            assertThatThrownBy(call).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("Outbox table").hasMessageContaining("08001")
                    .hasCauseInstanceOf(SQLException.class);
        }
        unreachable.outboxDispatched(List.of(e));
        assertThat(unreachable.queuedOutboxMarks()).as("a mark is queued without touching the database").isEqualTo(1);
        assertThatThrownBy(unreachable::outboxStatus).as("the next operation writes it first, and fails")
                .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("Outbox table")
                .hasMessageContaining("08001");
        assertThat(unreachable.queuedOutboxMarks()).as("kept queued for a later attempt").isEqualTo(1);
        JdbcIdempotencyStore alone = db().builder(down).dialect(db().dialect).groupCommit(false).build();
        assertThatThrownBy(() -> alone.outboxDispatched(List.of(e))).as("group commit off: written at once")
                .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("Outbox table");
    }

    // ------------------------------------------------------------------------------------------- queued marks

    /** A store whose own statements are counted, with a flush delay long enough that its flusher never runs here. */
    JdbcIdempotencyStore counted(AtomicInteger statements) {
        return db().builder(db().instrumented(statements, false)).lease(LEASE).retention(RETENTION)
                .dialect(db().dialect).outboxMarkFlushDelay(Duration.ofMinutes(10)).build();
    }

    List<OutboxEntry> sentBy(JdbcIdempotencyStore on, String prefix, int messages) throws Exception {
        List<OutboxEntry> all = new ArrayList<>();
        for (int i = 0; i < messages; i++) {
            all.addAll(handle(on, prefix + i, () -> work("A", List.of("x", "y"), () -> { })).sent());
        }
        return all;
    }

    @Test
    void queuedMarksRideTheNextTransactionalHandlersCommitWithNoStatementOfTheStoresOwn() throws Exception {
        AtomicInteger statements = new AtomicInteger();
        JdbcIdempotencyStore counted = counted(statements);
        List<OutboxEntry> sent = sentBy(counted, "q", 3);
        Claim next = counted.acquire("next");
        int before = statements.get();

        counted.outboxDispatched(sent);
        assertThat(statements.get()).as("queued: no statement").isEqualTo(before);
        assertThat(counted.queuedOutboxMarks()).isEqualTo(6);
        assertThat(db().outboxRows("dispatched_at IS NOT NULL")).as("not written yet").isZero();

        CapturingEnvelope envelope = new CapturingEnvelope("next", next.attempt());
        JdbcTransactionalHandler.of(counted, db().pool, work("B", List.of("z"), () -> { })).handle(envelope);

        assertThat(statements.get()).as("the marks rode the handler's transaction, on its connection")
                .isEqualTo(before);
        assertThat(counted.queuedOutboxMarks()).isZero();
        assertThat(db().outboxRows("dispatched_at IS NOT NULL")).as("the six marks, committed with the handler")
                .isEqualTo(6);
        assertThat(counted.pendingOutbox("next")).as("the handler's own send is pending").hasSize(1);
    }

    @Test
    void marksOfAHandlerTransactionThatDoesNotCommitAreQueuedAgainAndTheNextOneAppliesThem() throws Exception {
        AtomicInteger statements = new AtomicInteger();
        JdbcIdempotencyStore counted = counted(statements);
        List<OutboxEntry> sent = sentBy(counted, "r", 2);
        counted.outboxDispatched(sent);

        Claim failing = counted.acquire("fails");
        AtomicInteger handlerStatements = new AtomicInteger();
        JdbcTransactionalHandler broken = JdbcTransactionalHandler.of(counted,
                db().instrumented(handlerStatements, true), work("B", List.of("z"), () -> { }));
        assertThatThrownBy(() -> broken.handle(new CapturingEnvelope("fails", failing.attempt())))
                .isInstanceOf(SQLException.class).hasMessageContaining("commit failed");
        assertThat(counted.queuedOutboxMarks()).as("back in the queue").isEqualTo(4);
        assertThat(db().outboxRows("dispatched_at IS NOT NULL")).isZero();

        Claim failingWork = counted.acquire("throws");
        JdbcTransactionalHandler throwing = JdbcTransactionalHandler.of(counted, db().pool,
                work("B", List.of(), () -> {
                    throw new IllegalStateException("work failed (test)");
                }));
        assertThatThrownBy(() -> throwing.handle(new CapturingEnvelope("throws", failingWork.attempt())))
                .hasMessageContaining("work failed");
        assertThat(counted.queuedOutboxMarks()).as("a rolled-back work took none").isEqualTo(4);

        Claim later = counted.acquire("later");
        int before = statements.get();
        JdbcTransactionalHandler.of(counted, db().pool, work("B", List.of("z"), () -> { }))
                .handle(new CapturingEnvelope("later", later.attempt()));
        assertThat(statements.get()).as("no statement of the store's own").isEqualTo(before);
        assertThat(counted.queuedOutboxMarks()).isZero();
        assertThat(db().outboxRows("dispatched_at IS NOT NULL")).isEqualTo(4);
    }

    @Test
    void withNoTransactionToRideQueuedMarksAreWrittenAfterTheFlushDelayInOneStatement() throws Exception {
        AtomicInteger statements = new AtomicInteger();
        JdbcIdempotencyStore flushing = db().builder(db().instrumented(statements, false)).lease(LEASE)
                .retention(RETENTION).dialect(db().dialect).outboxMarkFlushDelay(Duration.ofMillis(300)).build();
        List<OutboxEntry> sent = sentBy(flushing, "f", 3);
        int before = statements.get();
        flushing.outboxDispatched(sent.subList(0, 2));
        flushing.outboxDispatched(sent.subList(2, 6));
        assertThat(flushing.queuedOutboxMarks()).isEqualTo(6);
        org.awaitility.Awaitility.await("the flusher writes the queued marks").atMost(Duration.ofSeconds(10))
                .until(() -> db().outboxRows("dispatched_at IS NOT NULL") == 6);
        assertThat(flushing.queuedOutboxMarks()).isZero();
        assertThat(statements.get() - before).as("one statement for both calls' marks").isEqualTo(1);
    }

    @Test
    void theStoresOtherOutboxOperationsWriteQueuedMarksFirstAndAThousandAreWrittenAtOnce() throws Exception {
        AtomicInteger statements = new AtomicInteger();
        JdbcIdempotencyStore counted = counted(statements);
        List<OutboxEntry> sent = sentBy(counted, "s", 2);
        counted.outboxDispatched(sent.subList(0, 1));
        assertThat(counted.outboxStatus().pending()).as("the status sees the mark made before it").isEqualTo(3);
        assertThat(counted.queuedOutboxMarks()).isZero();
        counted.outboxDispatched(sent.subList(1, 2));
        assertThat(counted.pendingOutbox("s0")).as("nor does the read of one message").isEmpty();
        counted.outboxDispatched(sent.subList(2, 3));
        db().ageOutbox(MIN_AGE.plusSeconds(1));
        assertThat(counted.pendingOutbox(MIN_AGE, 10)).as("the sweep does not take rows waiting for their mark")
                .extracting(OutboxEntry::messageId).containsExactly(sent.get(3).messageId());

        List<OutboxEntry> many = new ArrayList<>();
        for (int i = 0; i < org.acemq.amqp.store.jdbc.internal.JdbcOutbox.FLUSH_AT_ENTRIES; i++) {
            many.add(new OutboxEntry("gone" + i, 0, "gone" + i + "/0", "events", new byte[0]));
        }
        counted.outboxDispatched(many);
        org.awaitility.Awaitility.await("a full queue is written without waiting for the delay")
                .atMost(Duration.ofSeconds(10)).until(() -> counted.queuedOutboxMarks() == 0);
    }
}

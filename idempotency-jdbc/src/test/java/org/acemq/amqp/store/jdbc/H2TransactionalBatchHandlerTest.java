package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandlerIT.TestEnvelope;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The transactional batch handler on H2, whose dialect locks and confirms one message per statement (the default of
 * the dialect interface, which MariaDB / MySQL share): the batch commits its rows and confirms together, items the
 * work names stay unconfirmed, messages another owner confirmed are left out of the work.
 */
@Timeout(60)
class H2TransactionalBatchHandlerTest {

    static DialectFixture db;
    JdbcIdempotencyStore storeA;
    JdbcIdempotencyStore storeB;

    @BeforeAll
    static void startDatabase() {
        db = DialectFixture.h2(H2TransactionalBatchHandlerTest.class);
        db.update("CREATE TABLE effects (id VARCHAR(200) NOT NULL)");
    }

    @AfterAll
    static void dropDatabase() {
        db.close();
    }

    @BeforeEach
    void fresh() {
        db.truncate();
        db.update("DELETE FROM effects");
        storeA = db.builder().lease(Duration.ofSeconds(30)).build();
        storeB = db.builder().lease(Duration.ofSeconds(30)).build();
    }

    private List<Envelope> claimed(String... ids) {
        List<Envelope> batch = new ArrayList<>();
        for (String id : ids) {
            Claim c = storeA.acquire(id);
            batch.add(new TestEnvelope(id, c.attempt()));
        }
        return batch;
    }

    /** Another consumer takes {@code id} over (the lease lapses) and confirms it. */
    void confirmedElsewhere(String id) {
        db.advanceTime(Duration.ofSeconds(31));
        Claim b = storeB.acquire(id);
        assertThat(b.result()).isEqualTo(ClaimResult.CLAIMED);
        assertThat(storeB.confirm(b)).isTrue();
    }

    private long effects(String id) {
        return ((Number) db.column("SELECT count(*) FROM effects WHERE id = ?", id).get(0)).longValue();
    }

    private static void insert(List<Envelope> batch, java.sql.Connection c) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO effects VALUES (?)")) {
            for (Envelope e : batch) {
                ps.setString(1, e.id());
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    @Test
    void theBatchCommitsItsRowsAndConfirmsTogether() throws Exception {
        List<Envelope> batch = claimed("m1", "m2", "m3");
        JdbcTransactionalBatchHandler.of(storeA, db.pool, H2TransactionalBatchHandlerTest::insert).handle(batch);
        for (Envelope e : batch) {
            assertThat(effects(e.id())).isEqualTo(1);
            assertThat(storeB.acquire(e.id()).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        }
        assertThat(storeA.confirm(new Claim("m2", ClaimResult.CLAIMED, 1))).as("the runtime's confirm: quiet")
                .isTrue();
    }

    @Test
    void whatTheWorkSentCommitsToTheOutboxForTheMessagesThatCommitOnly() {
        storeA.createSchema(); // the outbox table beside the store's
        List<CapturingEnvelope> batch = new ArrayList<>();
        for (String id : List.of("m1", "m2", "m3")) {
            batch.add(new CapturingEnvelope(id, storeA.acquire(id).attempt()));
        }
        confirmedElsewhere("m1");
        JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(storeA, db.pool, (b, c) -> {
            for (Envelope e : b) {
                ((CapturingEnvelope) e).send("events", "from " + e.id());
            }
            insert(b.subList(0, 1), c); // m2's row; m3 fails before writing
            throw new BatchItemsFailedException(1, new IllegalStateException("test"));
        });
        assertThatThrownBy(() -> handler.handle(List.copyOf(batch))).isInstanceOf(BatchItemsFailedException.class);
        assertThat(storeA.pendingOutbox("m2")).as("m2 committed: its send is in the outbox")
                .extracting(OutboxContract::text).containsExactly("from m2");
        assertThat(batch.get(1).stored).as("outboxStored after the commit").isEqualTo(1);
        assertThat(storeA.pendingOutbox("m3")).as("m3 failed: nothing of it").isEmpty();
        assertThat(batch.get(2).stored + batch.get(2).discarded).isZero();
        assertThat(storeA.pendingOutbox("m1")).as("m1 was done elsewhere and did not run").isEmpty();
        assertThat(batch.get(0).discarded).isEqualTo(1);

        List<CapturingEnvelope> whole = List.of(new CapturingEnvelope("m4", storeA.acquire("m4").attempt()));
        JdbcTransactionalBatchHandler failing = JdbcTransactionalBatchHandler.of(storeA, db.pool, (b, c) -> {
            ((CapturingEnvelope) b.get(0)).send("events", "lost with the rollback");
            throw new IllegalStateException("test: the whole batch fails");
        });
        assertThatThrownBy(() -> failing.handle(List.copyOf(whole))).hasMessageContaining("whole batch");
        assertThat(storeA.pendingOutbox("m4")).isEmpty();
        assertThat(whole.get(0).stored).isZero();
    }

    @Test
    void namedItemsStayUnconfirmedAndMessagesDoneElsewhereAreLeftOut() {
        List<Envelope> batch = claimed("m1", "m2", "m3");
        confirmedElsewhere("m1");
        IllegalStateException busy = new IllegalStateException("test");
        List<String> got = new ArrayList<>();
        JdbcTransactionalBatchHandler handler = JdbcTransactionalBatchHandler.of(storeA, db.pool, (b, c) -> {
            b.forEach(e -> got.add(e.id()));
            insert(b.subList(0, 1), c);
            throw new BatchItemsFailedException(1, busy);
        });
        assertThatThrownBy(() -> handler.handle(batch)).isInstanceOfSatisfying(BatchItemsFailedException.class,
                e -> assertThat(e.failures()).containsExactly(Map.entry(2, busy)));
        assertThat(got).containsExactly("m2", "m3");
        assertThat(effects("m1")).isZero();
        assertThat(effects("m2")).isEqualTo(1);
        assertThat(effects("m3")).isZero();
        assertThat(storeA.isConfirmed("m2")).isTrue();
        assertThat(storeA.isConfirmed("m3")).isFalse();
        assertThat(storeA.release(new Claim("m3", ClaimResult.CLAIMED, 1))).as("m3's claim is still held").isTrue();
    }
}

package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batch calls ({@code acquireAll}, {@code confirmAll}, {@code releaseAll}) and refused ids on real PostgreSQL: a
 * batch is one statement (one autocommit transaction), all or nothing; an id PostgreSQL cannot hold is that id's
 * {@link InvalidMessageIdException}, never a {@link StoreUnavailableException}, in single and batch calls.
 */
@Timeout(120)
class JdbcBatchAndRefusedIdIT {

    static final Duration LEASE = Duration.ofHours(1);
    static final Duration RETENTION = Duration.ofHours(2);
    static PgFixture db;

    final AtomicInteger connections = new AtomicInteger();
    final AtomicInteger statements = new AtomicInteger();
    final AtomicReference<SQLException> failConnections = new AtomicReference<>();
    DataSource counting;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcBatchAndRefusedIdIT.class);
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
        counting = db.instrumented(connections, statements, failConnections);
    }

    JdbcIdempotencyStore.Builder builder() {
        return JdbcIdempotencyStore.builder(counting).tableName(db.table).lease(LEASE).retention(RETENTION);
    }

    static List<String> ids(String prefix, int n) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ids.add(prefix + i);
        }
        return ids;
    }

    // ------------------------------------------------------------------------------------------ one statement

    @Test
    void eachBatchCallIsOneStatementOnOneConnectionWhateverTheGroupCommitSetting() {
        for (JdbcIdempotencyStore store : List.of(builder().build(), builder().groupCommit(false).build(),
                builder().groupCommit(4, 1).build())) {
            db.truncate();
            List<String> ids = ids("b-", 50);
            int c0 = connections.get();
            int s0 = statements.get();
            List<Claim> claims = store.acquireAll(ids);
            assertThat(claims).allMatch(Claim::claimed);
            assertThat(store.confirmAll(claims.subList(0, 30))).isEmpty();
            store.releaseAll(claims.subList(30, 50));
            assertThat(connections.get() - c0).as("three calls, three connections (%s)", store).isEqualTo(3);
            assertThat(statements.get() - s0).as("three statements, three autocommit transactions").isEqualTo(3);
            assertThat(db.count("state = 1")).isEqualTo(30);
            assertThat(db.count("state = 2 AND attempts = 1")).isEqualTo(20);
        }
    }

    // ------------------------------------------------------------------------------------------ all or nothing

    @Test
    void aBatchThatPostgresFailsWritesNothingForAnyOfItsIds() {
        JdbcIdempotencyStore store = builder().build();
        Claim held = store.acquire("held");
        db.update("ALTER TABLE " + db.table + " ADD CONSTRAINT no_poison CHECK (id <> 'poison')");
        try {
            assertThatThrownBy(() -> store.acquireAll(List.of("good-1", "poison", "good-2")))
                    .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("SQLState 23514");
            assertThatThrownBy(() -> store.confirmAll(List.of(held, new Claim("poison", ClaimResult.CLAIMED, 1))))
                    .isInstanceOf(StoreUnavailableException.class);
            assertThat(db.count("id LIKE 'good-%' OR id = 'poison'")).as("nothing half-written").isZero();
            assertThat(db.count("id = 'held' AND state = 0")).as("held is not confirmed").isEqualTo(1);
        } finally {
            db.update("ALTER TABLE " + db.table + " DROP CONSTRAINT no_poison");
        }
        failConnections.set(new SQLException("connection refused", "08001"));
        try {
            assertThatThrownBy(() -> store.acquireAll(List.of("good-1", "good-2")))
                    .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("08001");
            assertThatThrownBy(() -> store.releaseAll(List.of(held, held)))
                    .isInstanceOf(StoreUnavailableException.class);
        } finally {
            failConnections.set(null);
        }
        assertThat(store.acquireAll(List.of("good-1", "good-2"))).extracting(Claim::attempt).containsExactly(1, 1);
        assertThat(store.confirmAll(List.of(held))).isEmpty();
    }

    // ------------------------------------------------------------------------------------------ refused ids

    @Test
    void anIdPostgresCannotHoldIsRefusedPerIdInSingleAndBatchCallsAndNothingIsWritten() {
        // a table whose id column was narrowed by hand: PostgreSQL refuses longer ids with SQLState 22001
        String narrow = db.schema.qualify("acemq_narrow_batch");
        JdbcIdempotencyStore store = builder().tableName(narrow).build();
        store.createSchema();
        db.update("ALTER TABLE " + narrow + " ALTER COLUMN id TYPE varchar(40)");
        String tooLong = "s:" + "y".repeat(50);

        assertThatThrownBy(() -> store.acquire(tooLong)).isInstanceOfSatisfying(InvalidMessageIdException.class,
                e -> assertThat(e.messageId()).isEqualTo(tooLong)).hasMessageContaining("22001")
                .hasMessageContaining("nothing was written");
        assertThatThrownBy(() -> store.confirm(tooLong)).isInstanceOf(InvalidMessageIdException.class);

        assertThatThrownBy(() -> store.acquireAll(List.of("ok-1", tooLong, "ok-2", tooLong)))
                .isInstanceOfSatisfying(InvalidMessageIdException.class, e -> {
                    assertThat(e.messageId()).as("the batch names the refused id").isEqualTo(tooLong);
                    assertThat(((SQLException) e.getCause()).getSQLState()).isEqualTo("22001");
                });
        Claim held = store.acquire("ok-1");
        assertThat(held).as("the batch claimed nothing: no attempt was counted")
                .isEqualTo(new Claim("ok-1", ClaimResult.CLAIMED, 1));
        assertThatThrownBy(() -> store.confirmAll(List.of(held, new Claim(tooLong, ClaimResult.CLAIMED, 1))))
                .isInstanceOfSatisfying(InvalidMessageIdException.class,
                        e -> assertThat(e.messageId()).isEqualTo(tooLong));
        assertThat(store.isConfirmed("ok-1")).as("nothing confirmed").isFalse();
        assertThat(db.column("SELECT id FROM " + narrow)).containsExactly("ok-1");
        assertThat(store.acquireAll(List.of("ok-2", "ok-3"))).extracting(Claim::result)
                .containsExactly(ClaimResult.CLAIMED, ClaimResult.CLAIMED);
        assertThat(store.confirmAll(List.of(held))).isEmpty();
    }

    @Test
    void aNulInAnIdIsRefusedForThatIdAloneAndNeverLooksLikeAnOutage() throws Exception {
        String nul = "s:j-nul\u0000byte";
        // what PostgreSQL (through the driver) does with such an id: a data error, SQLState class 22
        try (Connection c = db.pool.getConnection();
             PreparedStatement ps = c.prepareStatement("INSERT INTO " + db.table
                     + " (id, state, attempts, expires_at) VALUES (?, 2, 0, now())")) {
            ps.setString(1, nul);
            assertThatThrownBy(ps::executeUpdate).isInstanceOfSatisfying(SQLException.class,
                    e -> assertThat(e.getSQLState()).startsWith("22"));
        }
        JdbcIdempotencyStore store = builder().build();
        int before = connections.get();
        for (int round = 0; round < 100; round++) {
            assertThatThrownBy(() -> store.acquire(nul)).isInstanceOfSatisfying(InvalidMessageIdException.class,
                    e -> assertThat(e.messageId()).isEqualTo(nul)).isNotInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("\\u0000").hasMessageNotContaining("\u0000");
        }
        assertThat(connections.get()).as("refused before a connection is taken").isEqualTo(before);
        assertThat(db.count("")).isZero();

        // sixteen callers at once through the default store (group commit decides): only the NUL id fails
        int callers = 16;
        CyclicBarrier start = new CyclicBarrier(callers);
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try {
            List<Future<Object>> answers = new ArrayList<>();
            for (int i = 0; i < callers; i++) {
                String id = i == 7 ? nul : "s:fine-" + i;
                answers.add(pool.submit(() -> {
                    start.await();
                    try {
                        return store.acquire(id);
                    } catch (RuntimeException e) {
                        return e;
                    }
                }));
            }
            for (int i = 0; i < callers; i++) {
                Object answer = answers.get(i).get(60, TimeUnit.SECONDS);
                if (i == 7) {
                    assertThat(answer).isInstanceOf(InvalidMessageIdException.class);
                } else {
                    assertThat(answer).isEqualTo(new Claim("s:fine-" + i, ClaimResult.CLAIMED, 1));
                }
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(db.count("")).isEqualTo(callers - 1);
        assertThat(store.acquireAll(List.of("s:next", "s:fine-1"))).extracting(Claim::result)
                .containsExactly(ClaimResult.CLAIMED, ClaimResult.IN_PROGRESS);
    }
}

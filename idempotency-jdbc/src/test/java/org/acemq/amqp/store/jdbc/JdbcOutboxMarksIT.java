package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.sql.SQLException;
import org.acemq.amqp.api.OutboxEntry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Marks of dispatched outbox entries under concurrent load on real PostgreSQL: 8 threads mark 10,000 entries one call
 * each, with the store's defaults (group commit on) and, in the same run as the baseline, with group commit off.
 * Every mark statement takes one pooled connection and runs one auto-commit statement, so the connections the store
 * takes count its statements and its commits.
 */
@Timeout(300)
class JdbcOutboxMarksIT {

    static final int THREADS = 8;
    static final int MARKS = 10_000;

    static PgFixture db;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcOutboxMarksIT.class);
    }

    @AfterAll
    static void dropDatabase() {
        if (db != null) {
            db.close();
        }
    }

    /** @return MARKS pending rows, one per incoming key */
    static List<OutboxEntry> pendingRows() {
        String outbox = db.schema.qualify(JdbcIdempotencyStore.DEFAULT_OUTBOX_TABLE_NAME);
        db.update("TRUNCATE " + outbox);
        db.update("INSERT INTO " + outbox + " (incoming_key, position, message_id, address, message, created_at)"
                + " SELECT 'k' || g, 0, 'k' || g || '/0', 'events', '\\x01'::bytea, now() FROM generate_series(1, ?) g",
                MARKS);
        List<OutboxEntry> entries = new ArrayList<>(MARKS);
        for (int i = 1; i <= MARKS; i++) {
            entries.add(new OutboxEntry("k" + i, 0, "k" + i + "/0", "events", new byte[] {1}));
        }
        return entries;
    }

    record Run(int statements, long millis) {
        double commitsPerMark() {
            return statements / (double) MARKS;
        }
    }

    /** 8 threads, each marking its share of the entries, one call per entry. */
    static Run mark(boolean groupCommit) throws Exception {
        List<OutboxEntry> entries = pendingRows();
        AtomicInteger connections = new AtomicInteger();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(db.instrumented(connections, null,
                new AtomicReference<SQLException>())).tableName(db.table).groupCommit(groupCommit)
                .dialect(JdbcDialect.POSTGRESQL).build();
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        CyclicBarrier start = new CyclicBarrier(THREADS + 1);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                runs.add(pool.submit(() -> {
                    start.await();
                    for (int i = thread; i < MARKS; i += THREADS) {
                        store.outboxDispatched(List.of(entries.get(i)));
                    }
                    return null;
                }));
            }
            start.await();
            long begin = System.nanoTime();
            for (Future<?> f : runs) {
                f.get(240, TimeUnit.SECONDS);
            }
            long millis = Duration.ofNanos(System.nanoTime() - begin).toMillis();
            // the status read writes what the store still queues first (a store that defers marks), so that the
            // count covers every statement the marks took; less the status read's own
            assertThat(store.outboxStatus().pending()).as("every entry marked").isZero();
            int statements = connections.get() - 1;
            return new Run(statements, millis);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void eightThreadsMarkingTenThousandEntriesShareStatementsAndCommits() throws Exception {
        Run alone = mark(false);
        Run grouped = mark(true);
        System.out.printf("outbox marks, %d threads, %d marks: group commit off %d statements (%.3f commits/mark)"
                + " in %d ms; on %d statements (%.3f commits/mark, %.1f marks per commit) in %d ms; time ratio"
                + " on/off %.2f%n", THREADS, MARKS, alone.statements(), alone.commitsPerMark(), alone.millis(),
                grouped.statements(), grouped.commitsPerMark(), MARKS / (double) grouped.statements(),
                grouped.millis(), grouped.millis() / (double) alone.millis());
        assertThat(alone.statements()).as("baseline: one statement per mark").isEqualTo(MARKS);
        assertThat(grouped.statements()).as("group-committed marks share statements").isLessThan(MARKS / 2);
    }
}

package org.acemq.amqp.store.jdbc;

import java.time.Duration;
import org.acemq.amqp.testkit.IdempotencyStoreContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract on an in-process H2 database with the default
 * configuration (group commit on, dialect read from the connection). Time moves by shifting every stored deadline
 * back, because the store reads only the database's clock. A subclass runs it with two group-commit slots.
 */
class H2IdempotencyStoreTest extends IdempotencyStoreContract<JdbcIdempotencyStore> {

    static DialectFixture db;

    @BeforeAll
    static void startDatabase() {
        db();
    }

    @AfterAll
    static void dropDatabase() {
        synchronized (H2IdempotencyStoreTest.class) {
            if (db != null) {
                db.close();
                db = null;
            }
        }
    }

    static DialectFixture db() {
        synchronized (H2IdempotencyStoreTest.class) {
            if (db == null) {
                db = DialectFixture.h2(H2IdempotencyStoreTest.class);
            }
            return db;
        }
    }

    protected JdbcIdempotencyStore.Builder configure(JdbcIdempotencyStore.Builder builder) {
        return builder;
    }

    @Override
    protected JdbcIdempotencyStore createStore(Duration lease, Duration retention) {
        db().truncate();
        return configure(db().builder().lease(lease).retention(retention)).build();
    }

    @Override
    protected JdbcIdempotencyStore createPeer(JdbcIdempotencyStore first) {
        return configure(db().builder().lease(first.leaseDuration()).retention(first.retention())).build();
    }

    @Override
    protected void advanceTime(Duration amount) {
        db().advanceTime(amount);
    }
}

package org.acemq.amqp.store.jdbc;

import java.time.Duration;
import org.acemq.amqp.testkit.IdempotencyStoreContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract with the default configuration (group commit on, as many statements at once as the pool has
 * connections), against real PostgreSQL (see {@link org.acemq.amqp.testsupport.PostgresProvider}). Time moves by shifting
 * every stored deadline back, because the store reads only the database's clock. Subclasses run it in the other
 * modes: single statements, group commit with few slots, forced array statements.
 */
class JdbcIdempotencyStoreIT extends IdempotencyStoreContract<JdbcIdempotencyStore> {

    static PgFixture db;

    @BeforeAll
    static void startDatabase() {
        db();
    }

    @AfterAll
    static void dropDatabase() {
        synchronized (JdbcIdempotencyStoreIT.class) {
            if (db != null) {
                db.close();
                db = null;
            }
        }
    }

    private static PgFixture db() {
        // jqwik does not run JUnit's @BeforeAll for the property, so the fixture starts on first use; a fixture the
        // property starts after @AfterAll leaves its schema to the server's shutdown (or the schema-drop hook)
        synchronized (JdbcIdempotencyStoreIT.class) {
            if (db == null) {
                db = new PgFixture(JdbcIdempotencyStoreIT.class);
            }
            return db;
        }
    }

    /**
     * How the stores under test are configured; the default builder here, other settings in subclasses.
     *
     * @param builder a builder on the test table
     * @return the builder to build from
     */
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

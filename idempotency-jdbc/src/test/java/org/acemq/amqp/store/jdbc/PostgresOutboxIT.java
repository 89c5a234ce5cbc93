package org.acemq.amqp.store.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link OutboxContract} on real PostgreSQL (see {@link org.acemq.amqp.testsupport.PostgresProvider}). */
class PostgresOutboxIT extends OutboxContract {

    static PgFixture fixture;
    static OutboxDb db;

    @BeforeAll
    static void start() {
        fixture = new PgFixture(PostgresOutboxIT.class);
        db = OutboxDb.of(fixture);
    }

    @AfterAll
    static void stop() {
        fixture.close();
    }

    @Override
    OutboxDb db() {
        return db;
    }
}

package org.acemq.amqp.store.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link OutboxContract} on real MariaDB. */
class MariaDbOutboxIT extends OutboxContract {

    static DialectFixture fixture;
    static OutboxDb db;

    @BeforeAll
    static void start() {
        fixture = DialectFixture.mariaDb(MariaDbOutboxIT.class);
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

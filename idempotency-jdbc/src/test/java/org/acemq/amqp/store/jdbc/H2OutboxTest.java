package org.acemq.amqp.store.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link OutboxContract} on in-process H2. */
class H2OutboxTest extends OutboxContract {

    static DialectFixture fixture;
    static OutboxDb db;

    @BeforeAll
    static void start() {
        fixture = DialectFixture.h2(H2OutboxTest.class);
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

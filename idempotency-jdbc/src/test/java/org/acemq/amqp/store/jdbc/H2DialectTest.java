package org.acemq.amqp.store.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link DialectSpecificsContract} on in-process H2. */
class H2DialectTest extends DialectSpecificsContract {

    static DialectFixture db;

    @BeforeAll
    static void start() {
        db = DialectFixture.h2(H2DialectTest.class);
    }

    @AfterAll
    static void stop() {
        db.close();
    }

    @Override
    DialectFixture db() {
        return db;
    }

    @Override
    String narrowIdColumn() {
        return "ALTER TABLE " + db.quotedTable() + " ALTER COLUMN id VARCHAR(8)";
    }

    @Override
    String widenIdColumn() {
        return "ALTER TABLE " + db.quotedTable() + " ALTER COLUMN id VARCHAR(512)";
    }

    @Override
    String unreachableUrl() {
        return "jdbc:h2:tcp://127.0.0.1:1/mem:none";
    }
}

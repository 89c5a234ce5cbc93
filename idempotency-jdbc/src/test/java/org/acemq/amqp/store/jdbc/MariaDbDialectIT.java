package org.acemq.amqp.store.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link DialectSpecificsContract} on real MariaDB. */
class MariaDbDialectIT extends DialectSpecificsContract {

    static DialectFixture db;

    @BeforeAll
    static void start() {
        db = DialectFixture.mariaDb(MariaDbDialectIT.class);
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
        return "ALTER TABLE " + db.quotedTable() + " MODIFY id VARBINARY(8) NOT NULL";
    }

    @Override
    String widenIdColumn() {
        return "ALTER TABLE " + db.quotedTable() + " MODIFY id VARBINARY(2048) NOT NULL";
    }

    @Override
    String unreachableUrl() {
        return "jdbc:mariadb://127.0.0.1:1/none?connectTimeout=500";
    }
}

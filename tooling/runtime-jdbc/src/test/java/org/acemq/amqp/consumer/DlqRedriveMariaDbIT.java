package org.acemq.amqp.consumer;

import org.acemq.amqp.testsupport.MariaDbDatabase;
import org.acemq.amqp.testsupport.MariaDbProvider;

/**
 * {@link DlqRedriveIT} with the store on MariaDB (see {@link MariaDbProvider}): dead-lettering by the store's attempt
 * count, the operator's {@code JdbcStoreTool reset-attempts} against the MariaDB URL, the re-driven message processed
 * exactly once, a later copy a duplicate.
 */
class DlqRedriveMariaDbIT extends DlqRedriveIT {

    @Override
    Db openDatabase() {
        MariaDbDatabase db = MariaDbProvider.shared().newDatabase("DlqRedriveMariaDbIT");
        return new Db(db.jdbcUrl(), db.user(), db.password(), db.dataSource(), db::close);
    }
}

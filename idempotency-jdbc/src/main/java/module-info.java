/**
 * A {@link org.acemq.amqp.api.LeasedIdempotencyStore} in a table of PostgreSQL, MariaDB / MySQL or H2 (tests): {@link
 * org.acemq.amqp.store.jdbc.JdbcIdempotencyStore}. Works with any {@link javax.sql.DataSource} (a pool such as
 * HikariCP is recommended); the JDBC driver is the application's choice and is not a dependency of this module.
 */
module org.acemq.amqp.store.jdbc {
    requires transitive org.acemq.amqp.api;
    requires transitive java.sql;
    requires org.slf4j;

    exports org.acemq.amqp.store.jdbc;
}

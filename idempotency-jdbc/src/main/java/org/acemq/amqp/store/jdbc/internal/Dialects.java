package org.acemq.amqp.store.jdbc.internal;

import java.time.Duration;

/** Creates the {@link StoreDialect} of a product. */
public final class Dialects {

    private Dialects() {
    }

    /**
     * @param kind the name of a {@code JdbcDialect} constant
     * @param table the validated table name
     * @param lease the lease
     * @param retention the retention
     * @return the dialect
     */
    public static StoreDialect create(String kind, TableName table, Duration lease, Duration retention) {
        return create(kind, table, lease, retention, false);
    }

    /**
     * @param kind the name of a {@code JdbcDialect} constant
     * @param table the validated table name
     * @param lease the lease
     * @param retention the retention
     * @param mysqlStatements tests only: on MariaDB, run the statements the dialect runs on MySQL 8 (a claim without
     *     {@code RETURNING}), whatever the server says it is
     * @return the dialect
     */
    public static StoreDialect create(String kind, TableName table, Duration lease, Duration retention,
                                      boolean mysqlStatements) {
        return switch (kind) {
            case "POSTGRESQL" -> new PostgresDialect(table, lease, retention);
            case "MARIADB" -> new MariaDbDialect(table, lease, retention, mysqlStatements ? Boolean.FALSE : null);
            case "H2" -> new H2Dialect(table, lease, retention);
            default -> throw new IllegalArgumentException("Unknown dialect " + kind);
        };
    }
}

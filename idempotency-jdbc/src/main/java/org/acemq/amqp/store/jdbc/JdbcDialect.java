package org.acemq.amqp.store.jdbc;

import java.util.Locale;

/**
 * The database products {@link JdbcIdempotencyStore} runs on. The store reads the product from the first connection's
 * metadata unless one is {@linkplain JdbcIdempotencyStore.Builder#dialect set}; {@code docs/jdbc-store.md} says what
 * each one guarantees and where they differ.
 */
public enum JdbcDialect {

    /** PostgreSQL 12 or later: every operation one statement in auto-commit. */
    POSTGRESQL,
    /**
     * MariaDB 10.11 or later, and MySQL 8 (InnoDB; the SQL avoids what MariaDB lacks, and uses {@code RETURNING} only
     * on a server whose version says MariaDB). Batches are multi-row statements with one commit per batch; a fenced
     * confirm of a lost lease is a short transaction of a few statements; see {@code docs/jdbc-store.md}.
     */
    MARIADB,
    /** H2 2.x, for tests: the same design as {@link #MARIADB} in H2's own SQL. Not meant for production. */
    H2;

    /**
     * @param productName {@link java.sql.DatabaseMetaData#getDatabaseProductName()}
     * @return the dialect of that product
     * @throws IllegalStateException for a product the store does not support
     */
    public static JdbcDialect ofProduct(String productName) {
        String p = productName == null ? "" : productName.toLowerCase(Locale.ROOT);
        if (p.contains("postgresql")) {
            return POSTGRESQL;
        }
        if (p.contains("mariadb") || p.contains("mysql")) {
            return MARIADB;
        }
        if (p.equals("h2")) {
            return H2;
        }
        throw new IllegalStateException("JdbcIdempotencyStore supports PostgreSQL, MariaDB / MySQL and H2, but the "
                + "DataSource's database is '" + productName + "'");
    }
}

package org.acemq.amqp.testsupport;

import javax.sql.DataSource;

/**
 * An empty schema that belongs to one test class, from {@link PostgresServer#newSchema(String)}. Its
 * {@link #jdbcUrl()} and {@link #dataSource()} put the schema first on the {@code search_path}, so unqualified table
 * names land in it. {@link #close()} drops it with everything in it.
 *
 * <p>Typical use:
 * <pre>{@code
 * static PostgresSchema schema;
 * @BeforeAll static void db() { schema = PostgresProvider.shared().newSchema("MyStoreIT"); }
 * @AfterAll static void dropDb() { schema.close(); }
 * }</pre>
 */
public final class PostgresSchema implements AutoCloseable {

    private final PostgresServer server;
    private final String name;
    private final String jdbcUrl;

    PostgresSchema(PostgresServer server, String name) {
        this.server = server;
        this.name = name;
        this.jdbcUrl = withCurrentSchema(server.jdbcUrl(), name);
    }

    static String withCurrentSchema(String url, String schema) {
        return url + (url.indexOf('?') >= 0 ? "&" : "?") + "currentSchema=" + schema;
    }

    /** @return the schema name, a plain lowercase identifier that needs no quoting */
    public String name() {
        return name;
    }

    /**
     * @param table an unqualified table name
     * @return {@code schema.table}
     */
    public String qualify(String table) {
        return name + "." + table;
    }

    /** @return a JDBC URL whose connections use this schema first ({@code currentSchema}) */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** @return the user name for {@link #jdbcUrl()}, or null when it is part of the URL */
    public String user() {
        return server.user();
    }

    /** @return the password for {@link #jdbcUrl()}, or null */
    public String password() {
        return server.password();
    }

    /** @return the server this schema lives on */
    public PostgresServer server() {
        return server;
    }

    /** @return a new unpooled DataSource whose connections use this schema first */
    public DataSource dataSource() {
        return server.dataSource(jdbcUrl);
    }

    /** Drops the schema and everything in it. Idempotent. */
    @Override
    public void close() {
        server.dropSchema(name);
    }

    @Override
    public String toString() {
        return "PostgresSchema[" + name + " on " + server + "]";
    }
}

package org.acemq.amqp.testsupport;

/**
 * An empty database on a {@link MariaDbServer}, for one test class. Close it to drop it.
 *
 * @param server the server
 * @param name the database name
 */
public record MariaDbDatabase(MariaDbServer server, String name) implements AutoCloseable {

    /** @return the JDBC URL with this database as the default */
    public String jdbcUrl() {
        return server.jdbcUrl(name);
    }

    /** @return the user name */
    public String user() {
        return server.user();
    }

    /** @return the password */
    public String password() {
        return server.password();
    }

    /**
     * @param table an unqualified table name
     * @return {@code <database>.<table>}
     */
    public String qualify(String table) {
        return name + "." + table;
    }

    @Override
    public void close() {
        server.dropDatabase(name);
    }
}

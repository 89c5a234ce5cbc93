package org.acemq.amqp.acceptance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.Testcontainers;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * Finds Prometheus and promtool for the monitoring checks, the way {@code PostgresProvider} finds PostgreSQL and
 * {@code RabbitMqProvider} RabbitMQ. The first option that applies wins:
 * <ol>
 *   <li>the environment variable {@value #BIN_DIR_ENV}: a directory holding {@code prometheus} and {@code promtool}
 *       (2.x). A variable that is set but does not name such a directory fails the check; it is not a reason to use
 *       something else;</li>
 *   <li>Testcontainers ({@value #DOCKER_IMAGE}, whose image also holds {@code /bin/promtool}), if a Docker daemon is
 *       available: promtool runs in the container on copies of the files, and the server scrapes the test's metrics
 *       endpoints on this machine through {@code host.testcontainers.internal};</li>
 *   <li>the local package: {@code prometheus} and {@code promtool} on the PATH or in {@code /usr/bin} (Debian package
 *       {@code prometheus}; {@code .ci/run} installs it).</li>
 * </ol>
 * If none applies, the check fails with {@link #HOW_TO}; it never skips. {@code -D}{@value #MODE_PROPERTY}{@code =env|
 * testcontainers|local} (or the environment variable {@value #MODE_ENV}) forces one option; the default {@code auto}
 * tries them in the order above.
 */
final class PrometheusTools {

    /** Environment variable naming a directory that holds {@code prometheus} and {@code promtool}. */
    static final String BIN_DIR_ENV = "ACEMQ_PROMETHEUS_BIN_DIR";
    /** System property forcing one option: {@code auto} (default), {@code env}, {@code testcontainers}, {@code local}. */
    static final String MODE_PROPERTY = "acemq.test.prometheus";
    /** Environment variable equivalent of {@link #MODE_PROPERTY}; the system property wins. */
    static final String MODE_ENV = "ACEMQ_TEST_PROMETHEUS";
    /** The image Testcontainers runs: the 2.53 long-term-support line, like the Debian package a 2.x. */
    static final String DOCKER_IMAGE = "prom/prometheus:v2.53.4";
    /** The programs the checks run. */
    static final List<String> PROGRAMS = List.of("prometheus", "promtool");

    static final String HOW_TO = "The monitoring checks run the real Prometheus and promtool (2.x). They are taken "
            + "from, in this order:\n"
            + "  1. " + BIN_DIR_ENV + "=<directory holding prometheus and promtool>, if set;\n"
            + "  2. Docker, if a daemon is available: Testcontainers runs " + DOCKER_IMAGE + ";\n"
            + "  3. the local package: Debian/Ubuntu: apt-get update && apt-get install -y prometheus, then stop the "
            + "service the package starts (service prometheus stop, service prometheus-node-exporter stop); .ci/run "
            + "does this. Elsewhere: put prometheus and promtool (from prometheus.io) on the PATH.\n"
            + "Force one with -D" + MODE_PROPERTY + "=env|testcontainers|local (or " + MODE_ENV + ").";

    private static final int WEB_PORT = 9090;
    private static final String CONTAINER_DIR = "/acemq";
    private static final Object LOCK = new Object();
    private static Choice chosen;
    private static GenericContainer<?> promtoolContainer;

    private PrometheusTools() {
    }

    /** Where Prometheus comes from. */
    enum Source {
        /** {@value #BIN_DIR_ENV}. */
        ENVIRONMENT,
        /** Testcontainers, {@value #DOCKER_IMAGE}. */
        TESTCONTAINERS,
        /** The programs installed on this machine (PATH, /usr/bin). */
        LOCAL_PACKAGE
    }

    /**
     * The option chosen.
     *
     * @param source where Prometheus comes from
     * @param programs the paths of {@code prometheus} and {@code promtool}; empty for {@link Source#TESTCONTAINERS}
     */
    record Choice(Source source, Map<String, Path> programs) {

        Choice {
            programs = Map.copyOf(programs);
        }

        @Override
        public String toString() {
            return source == Source.TESTCONTAINERS ? "Testcontainers " + DOCKER_IMAGE
                    : source.name().toLowerCase(Locale.ROOT).replace('_', ' ') + " " + programs.get("prometheus")
                    + ", " + programs.get("promtool");
        }
    }

    /**
     * @return the option for this JVM, chosen on the first call from the real environment
     * @throws AssertionError with {@link #HOW_TO} if none applies
     */
    static Choice choice() {
        synchronized (LOCK) {
            if (chosen == null) {
                chosen = choose(System.getenv(), System.getProperty(MODE_PROPERTY), PrometheusTools::dockerAvailable,
                        p -> Files.isRegularFile(p) && Files.isExecutable(p));
            }
            return chosen;
        }
    }

    /**
     * Chooses an option; everything it looks at is passed in, so that the order can be tested without Docker.
     *
     * @param env the environment variables
     * @param modeProperty the value of {@value #MODE_PROPERTY}, or null
     * @param docker whether a Docker daemon is available (asked only when the order reaches Testcontainers)
     * @param executable whether a path is an executable file
     * @return the first option that applies
     * @throws AssertionError saying what was tried and {@link #HOW_TO} if none applies
     */
    static Choice choose(Map<String, String> env, String modeProperty, BooleanSupplier docker,
            Predicate<Path> executable) {
        String mode = (modeProperty != null ? modeProperty : env.getOrDefault(MODE_ENV, "auto")).trim()
                .toLowerCase(Locale.ROOT);
        if (mode.isEmpty()) {
            mode = "auto";
        }
        List<String> tried = new ArrayList<>();
        Choice choice = switch (mode) {
            case "auto", "env" -> fromEnvironment(env, executable, tried);
            case "testcontainers", "docker" -> fromDocker(docker, tried);
            case "local" -> fromLocalPackage(env, executable, tried);
            default -> throw new AssertionError(MODE_PROPERTY + " must be one of auto, env, testcontainers, local, "
                    + "but was '" + mode + "'");
        };
        if (choice == null && mode.equals("auto")) {
            choice = fromDocker(docker, tried);
            if (choice == null) {
                choice = fromLocalPackage(env, executable, tried);
            }
        }
        if (choice == null) {
            throw new AssertionError("No Prometheus for the monitoring checks (mode " + mode + "); tried:"
                    + String.join("", tried) + "\n" + HOW_TO);
        }
        return choice;
    }

    private static Choice fromEnvironment(Map<String, String> env, Predicate<Path> executable, List<String> tried) {
        String binDir = env.get(BIN_DIR_ENV);
        if (binDir == null || binDir.isBlank()) {
            tried.add("\n  - " + BIN_DIR_ENV + ": not set");
            return null;
        }
        Map<String, Path> programs = new LinkedHashMap<>();
        for (String program : PROGRAMS) {
            Path p = Path.of(binDir.trim(), program);
            if (!executable.test(p)) {
                // the user asked for these programs: do not silently check with others
                throw new AssertionError(BIN_DIR_ENV + "=" + binDir + " is set, but " + p + " is not an executable "
                        + "file.\n" + HOW_TO);
            }
            programs.put(program, p);
        }
        return new Choice(Source.ENVIRONMENT, programs);
    }

    private static Choice fromDocker(BooleanSupplier docker, List<String> tried) {
        if (!docker.getAsBoolean()) {
            tried.add("\n  - Testcontainers: no Docker environment available");
            return null;
        }
        return new Choice(Source.TESTCONTAINERS, Map.of());
    }

    private static Choice fromLocalPackage(Map<String, String> env, Predicate<Path> executable, List<String> tried) {
        List<Path> dirs = new ArrayList<>();
        for (String dir : env.getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!dir.isBlank()) {
                dirs.add(Path.of(dir));
            }
        }
        dirs.add(Path.of("/usr/bin"));
        Map<String, Path> programs = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        for (String program : PROGRAMS) {
            dirs.stream().map(d -> d.resolve(program)).filter(executable).findFirst()
                    .ifPresentOrElse(p -> programs.put(program, p), () -> missing.add(program));
        }
        if (!missing.isEmpty()) {
            tried.add("\n  - local package: " + String.join(" and ", missing) + " not found on the PATH or in "
                    + "/usr/bin");
            return null;
        }
        return new Choice(Source.LOCAL_PACKAGE, programs);
    }

    /** @return whether Testcontainers finds a Docker daemon; false if it cannot even ask */
    static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (Throwable t) { // a LinkageError from docker-java means no Docker for us, not a broken check
            if (t instanceof VirtualMachineError vme) {
                throw vme;
            }
            return false;
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // promtool

    /** What a finished command printed. */
    record Run(int exitCode, String output) {
    }

    /**
     * Runs {@code promtool} in {@code dir} (locally, or in a container on copies of the directory's files).
     *
     * @param dir the directory holding the files the arguments name by their file names
     * @param args promtool's arguments, e.g. {@code check rules alerts.yml}
     * @return its exit code and its stdout and stderr together
     */
    static Run promtool(Path dir, String... args) {
        Choice choice = choice();
        if (choice.source() != Source.TESTCONTAINERS) {
            List<String> command = new ArrayList<>();
            command.add(choice.programs().get("promtool").toString());
            command.addAll(List.of(args));
            return run(dir, command.toArray(String[]::new));
        }
        GenericContainer<?> container = promtoolContainer();
        String target = CONTAINER_DIR + "/" + Integer.toHexString(dir.toAbsolutePath().hashCode());
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                container.copyFileToContainer(MountableFile.forHostPath(f), target + "/" + f.getFileName());
            }
            StringBuilder line = new StringBuilder("cd " + target + " && /bin/promtool");
            for (String a : args) {
                line.append(" '").append(a.replace("'", "'\\''")).append('\'');
            }
            ExecResult r = container.execInContainer("sh", "-c", line.toString());
            return new Run(r.getExitCode(), r.getStdout() + r.getStderr());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    @SuppressWarnings("resource") // stopped by the shutdown hook
    private static GenericContainer<?> promtoolContainer() {
        synchronized (LOCK) {
            if (promtoolContainer == null) {
                // the image's own server on its default configuration keeps the container running for exec
                GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(DOCKER_IMAGE))
                        .withExposedPorts(WEB_PORT)
                        .waitingFor(Wait.forHttp("/-/ready").forStatusCode(200)
                                .withStartupTimeout(Duration.ofMinutes(2)));
                c.start();
                Runtime.getRuntime().addShutdownHook(new Thread(c::stop, "acemq-testcontainers-promtool-stop"));
                promtoolContainer = c;
            }
            return promtoolContainer;
        }
    }

    /**
     * @param workDir the working directory
     * @param command the command line
     * @return its exit code and its stdout and stderr together
     */
    static Run run(Path workDir, String... command) {
        try {
            Path log = Files.createTempFile("acemq-promtool-", ".log");
            try {
                Process p = new ProcessBuilder(command).directory(workDir.toFile()).redirectErrorStream(true)
                        .redirectOutput(log.toFile()).start();
                if (!p.waitFor(120, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new AssertionError(String.join(" ", command) + " did not finish within 120 s");
                }
                return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(log);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // the server

    /** A running Prometheus that scrapes the given targets every second and evaluates the given rules. */
    interface Server extends AutoCloseable {

        /** @return e.g. {@code http://127.0.0.1:41234}, for the HTTP API */
        String baseUrl();

        /** @return where it comes from, for the report */
        String description();

        @Override
        void close();
    }

    /**
     * Starts Prometheus, ready to answer.
     *
     * @param dir a fresh directory for its configuration, data and log
     * @param rules the rule file it loads
     * @param jobs scrape jobs: job name to a port of 127.0.0.1 on this machine serving {@code /metrics}
     * @return the running server
     */
    static Server start(Path dir, Path rules, Map<String, Integer> jobs) {
        Choice choice = choice();
        return choice.source() == Source.TESTCONTAINERS ? startContainer(rules, jobs)
                : startProcess(choice.programs().get("prometheus"), dir, rules, jobs);
    }

    /** @return the configuration: 1 s scrapes and evaluations, the rules, one static target per job */
    static String config(String rules, String targetHost, Map<String, Integer> jobs) {
        List<String> lines = new ArrayList<>(List.of(
                "global:",
                "  scrape_interval: 1s",
                "  scrape_timeout: 1s",
                "  evaluation_interval: 1s",
                "rule_files:",
                "  - " + rules,
                "scrape_configs:"));
        jobs.forEach((job, port) -> {
            lines.add("  - job_name: " + job);
            lines.add("    static_configs:");
            lines.add("      - targets: ['" + targetHost + ":" + port + "']");
        });
        lines.add("");
        return String.join("\n", lines);
    }

    private static Server startProcess(Path prometheus, Path dir, Path rules, Map<String, Integer> jobs) {
        int webPort = freePort();
        Path log = dir.resolve("prometheus.log");
        Process process;
        try {
            Path config = dir.resolve("prometheus.yml");
            Files.writeString(config, config(rules.toAbsolutePath().toString(), "127.0.0.1", jobs));
            process = new ProcessBuilder(prometheus.toString(), "--config.file=" + config,
                    "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + webPort,
                    "--log.level=warn").redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String baseUrl = "http://127.0.0.1:" + webPort;
        Server server = new Server() {
            @Override
            public String baseUrl() {
                return baseUrl;
            }

            @Override
            public String description() {
                return choice().toString();
            }

            @Override
            public void close() {
                process.destroy();
                try {
                    if (!process.waitFor(20, TimeUnit.SECONDS)) {
                        process.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    process.destroyForcibly();
                }
            }
        };
        try {
            org.awaitility.Awaitility.await("Prometheus ready at " + baseUrl).atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(200))
                    .failFast("Prometheus exited: " + log, () -> !process.isAlive())
                    .until(() -> ready(baseUrl));
        } catch (RuntimeException | Error e) {
            server.close();
            throw e;
        }
        return server;
    }

    @SuppressWarnings("resource") // stopped by close()
    private static Server startContainer(Path rules, Map<String, Integer> jobs) {
        // the container reaches this machine's 127.0.0.1 ports through Testcontainers' tunnel
        Testcontainers.exposeHostPorts(jobs.values().stream().mapToInt(Integer::intValue).toArray());
        String rulesInContainer = "/etc/prometheus/acemq-rules.yml";
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(DOCKER_IMAGE))
                .withExposedPorts(WEB_PORT)
                .withCopyToContainer(MountableFile.forHostPath(rules), rulesInContainer)
                .withCopyToContainer(Transferable.of(config(rulesInContainer, "host.testcontainers.internal", jobs)),
                        "/etc/prometheus/acemq.yml")
                .withCommand("--config.file=/etc/prometheus/acemq.yml", "--storage.tsdb.path=/prometheus",
                        "--web.listen-address=:" + WEB_PORT, "--log.level=warn")
                .waitingFor(Wait.forHttp("/-/ready").forStatusCode(200).withStartupTimeout(Duration.ofMinutes(2)));
        c.start();
        String baseUrl = "http://" + c.getHost() + ":" + c.getMappedPort(WEB_PORT);
        return new Server() {
            @Override
            public String baseUrl() {
                return baseUrl;
            }

            @Override
            public String description() {
                return "Testcontainers " + DOCKER_IMAGE;
            }

            @Override
            public void close() {
                c.stop();
            }
        };
    }

    private static boolean ready(String baseUrl) {
        try {
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(baseUrl
                    + "/-/ready")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** @return a port of 127.0.0.1 that was free a moment ago (for a process that takes its port as an argument) */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

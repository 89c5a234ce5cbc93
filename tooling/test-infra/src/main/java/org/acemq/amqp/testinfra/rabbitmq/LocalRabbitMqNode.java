package org.acemq.amqp.testinfra.rabbitmq;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A private RabbitMQ node started from the installed Debian package ({@code rabbitmq-server}), for tests: its own
 * temporary directory (data, logs, config, Erlang cookie), a unique node name, free ports for AMQP, distribution and
 * its own {@code epmd}, the AMQP 1.0 plugin enabled, and nothing read from {@code /etc/rabbitmq}. The system
 * service, if there is one, is left alone.
 *
 * <p>The node is configured with an Erlang-term config file (not {@code rabbitmq.conf}: the cuttlefish translation
 * of the new format took about half of the start-up time on a loaded 2-core machine), listens on 127.0.0.1 only,
 * lets {@code guest} in from loopback, imports the dead-letter policy at boot ({@link DeadLettering}), and runs its
 * schedulers without busy-waiting so that an idle node does not take CPU from the build.
 *
 * <p>It runs {@code /usr/lib/rabbitmq/bin/rabbitmq-server} directly (the {@code /usr/sbin} wrapper switches to the
 * {@code rabbitmq} user). That script stops the node gracefully on SIGTERM; this class stops it that way and waits
 * (faster than {@code rabbitmqctl stop}, which boots a second Erlang VM), and kills what is left after
 * {@link #STOP_TIMEOUT}. It is stopped by {@link #close()}, by a JVM shutdown hook, and by a watchdog process that
 * stops it and deletes its directory if the JVM dies without running its hooks (kill -9).
 *
 * <p><b>Threading:</b> the lifecycle methods are synchronized.
 */
final class LocalRabbitMqNode implements BrokerControl {

    /** Where the Debian package installs its scripts. */
    static final Path SCRIPTS = Path.of("/usr/lib/rabbitmq/bin");
    /** How long a start may take before it counts as failed. */
    static final Duration START_TIMEOUT = Duration.ofSeconds(90);
    /** How long a graceful stop may take before the node is killed. */
    static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

    private static final Logger LOG = LoggerFactory.getLogger(LocalRabbitMqNode.class);
    private static final String READY_LINE = "Server startup complete";
    private static final String HOST = "127.0.0.1";

    private final Path directory;
    private final String nodeName;
    private final int amqpPort;
    private final int distPort;
    private final int epmdPort;
    /** The TLS listener's port, or -1 without one. */
    private final int tlsPort;
    private final TlsFiles tls;
    private final Map<String, String> environment;
    private final Thread shutdownHook;
    private Process epmd;
    private Process watchdog;
    private Process server;
    private int starts;
    private Duration lastStartTime = Duration.ZERO;
    private boolean closed;

    /**
     * The PEM files of a TLS listener: the authority whose client certificates are accepted, the node's certificate and
     * its unencrypted private key.
     *
     * @param caPem the certificate authority, PEM
     * @param certificatePem the node's certificate, PEM
     * @param keyPem the node's private key, PKCS#8 PEM
     */
    record TlsFiles(Path caPem, Path certificatePem, Path keyPem) {
    }

    private LocalRabbitMqNode(Path directory, TlsFiles tls) throws IOException {
        this.directory = directory;
        this.nodeName = "acemq-" + UUID.randomUUID().toString().substring(0, 8) + "@localhost";
        int[] ports = freePorts(4);
        this.amqpPort = ports[0];
        this.distPort = ports[1];
        this.epmdPort = ports[2];
        this.tls = tls;
        this.tlsPort = tls == null ? -1 : ports[3];
        this.environment = writeConfiguration();
        this.shutdownHook = new Thread(this::close, "acemq-rabbitmq-node-stop");
    }

    /** @return whether the Debian package's scripts are installed */
    static boolean installed() {
        return Files.isExecutable(SCRIPTS.resolve("rabbitmq-server"));
    }

    /**
     * Starts a new node and waits until it accepts clients. A node that exits while starting (a port taken between
     * choosing it and binding it) is tried once more on new ports.
     *
     * @return the running node
     * @throws IllegalStateException if it does not start within {@link #START_TIMEOUT}; nothing is left running
     */
    static LocalRabbitMqNode start() {
        return start(null);
    }

    /**
     * Like {@link #start()}, with a TLS listener next to the plain one ({@link #tlsPort()}): it verifies a client
     * certificate against {@code tls.caPem()} when the client presents one, and accepts clients without one.
     *
     * @param tls the listener's files, or null for none
     * @return the running node
     */
    static LocalRabbitMqNode start(TlsFiles tls) {
        try {
            return startOnce(tls);
        } catch (NodeExited e) {
            LOG.warn("RabbitMQ node exited while starting; trying once more on new ports: {}", e.getMessage());
            return startOnce(tls);
        }
    }

    private static LocalRabbitMqNode startOnce(TlsFiles tls) {
        LocalRabbitMqNode node;
        try {
            node = new LocalRabbitMqNode(Files.createTempDirectory("acemq-rabbitmq-"), tls);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare a directory for a RabbitMQ node", e);
        }
        try {
            node.launch();
            return node;
        } catch (RuntimeException e) {
            node.close();
            throw e;
        }
    }

    /** @return 127.0.0.1 */
    String host() {
        return HOST;
    }

    /** @return the AMQP port (1.0 and 0-9-1) */
    int amqpPort() {
        return amqpPort;
    }

    /** @return the TLS listener's port (AMQP 1.0 and 0-9-1 over TLS), or -1 without one */
    int tlsPort() {
        return tlsPort;
    }

    /** @return the node name, e.g. {@code acemq-1a2b3c4d@localhost} */
    String nodeName() {
        return nodeName;
    }

    /** @return how long the last start took, from launching the script to the node's "startup complete" */
    synchronized Duration lastStartTime() {
        return lastStartTime;
    }

    /** @return the operating-system process id of the running node's start script, or -1 if it is not running */
    synchronized long pid() {
        return server != null && server.isAlive() ? server.pid() : -1;
    }

    /** @return the node's temporary directory (deleted by {@link #close()}) */
    Path directory() {
        return directory;
    }

    @Override
    public Path logFile() {
        return directory.resolve("log").resolve(nodeName + ".log");
    }

    @Override
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException("the RabbitMQ node is closed");
        }
        stopServer();
        startServer();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stopServer();
        } finally {
            destroy(watchdog);
            destroy(epmd);
            deleteRecursively(directory);
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException | IllegalArgumentException ignored) {
                // the JVM is shutting down (we may be the hook), or the hook was never added
            }
        }
    }

    @Override
    public String toString() {
        return "RabbitMQ node " + nodeName + " on " + HOST + ":" + amqpPort;
    }

    // ------------------------------------------------------------------------------------------------

    private synchronized void launch() {
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        try {
            epmd = new ProcessBuilder("epmd", "-port", Integer.toString(epmdPort))
                    .redirectErrorStream(true)
                    .redirectOutput(directory.resolve("epmd.out").toFile())
                    .start();
            Files.writeString(directory.resolve("epmd.pid"), Long.toString(epmd.pid()));
            watchdog = startWatchdog();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start epmd for the RabbitMQ node: " + e, e);
        }
        startServer();
    }

    private void startServer() {
        starts++;
        Path out = directory.resolve("server-" + starts + ".out");
        Path log = logFile();
        long logOffset = size(log);
        long begin = System.nanoTime();
        try {
            ProcessBuilder pb = new ProcessBuilder(SCRIPTS.resolve("rabbitmq-server").toString())
                    .directory(directory.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(out.toFile());
            pb.environment().putAll(environment);
            server = pb.start();
            Files.writeString(directory.resolve("server.pid"), Long.toString(server.pid()));
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + SCRIPTS.resolve("rabbitmq-server") + ": " + e, e);
        }
        long deadline = begin + START_TIMEOUT.toNanos();
        while (!logContains(log, logOffset, READY_LINE)) {
            if (!server.isAlive()) {
                throw new NodeExited("the RabbitMQ node " + nodeName + " exited with " + server.exitValue()
                        + " while starting; its output:\n" + tail(out) + "\nits log:\n" + tail(log));
            }
            if (System.nanoTime() > deadline) {
                stopServer();
                throw new IllegalStateException("the RabbitMQ node " + nodeName + " did not start within "
                        + START_TIMEOUT.toSeconds() + " s; its output:\n" + tail(out) + "\nits log:\n" + tail(log));
            }
            pause(50);
        }
        lastStartTime = Duration.ofNanos(System.nanoTime() - begin);
        try {
            Files.writeString(directory.resolve("server.children"), server.descendants()
                    .map(h -> Long.toString(h.pid())).collect(Collectors.joining(" ")));
        } catch (IOException e) {
            LOG.warn("cannot record the RabbitMQ node's processes for the watchdog: {}", e.toString());
        }
        LOG.info("RabbitMQ node {} started on {}:{} in {} ms (start {})", nodeName, HOST, amqpPort,
                lastStartTime.toMillis(), starts);
    }

    private void stopServer() {
        Process p = server;
        server = null;
        if (p == null || !p.isAlive()) {
            return;
        }
        List<ProcessHandle> tree = new ArrayList<>(p.descendants().collect(Collectors.toList()));
        long begin = System.nanoTime();
        p.destroy(); // SIGTERM: the script stops the node gracefully and waits for it
        try {
            if (!p.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn("RabbitMQ node {} did not stop within {} s; killing it", nodeName, STOP_TIMEOUT.toSeconds());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        p.destroyForcibly();
        tree.forEach(ProcessHandle::destroyForcibly);
        for (ProcessHandle h : tree) {
            h.onExit().completeOnTimeout(h, 5, TimeUnit.SECONDS).join();
        }
        LOG.info("RabbitMQ node {} stopped in {} ms", nodeName, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin));
    }

    /**
     * A shell loop that outlives a JVM killed with -9: when this JVM is gone it stops the node (SIGTERM, then
     * SIGKILL), stops epmd and deletes the directory. {@link #close()} ends it.
     */
    private Process startWatchdog() throws IOException {
        String script = String.join("\n",
                "jvm=$1; dir=$2",
                "while kill -0 \"$jvm\" 2>/dev/null; do sleep 1; done",
                "s=$(cat \"$dir/server.pid\" 2>/dev/null)",
                "kids=$(cat \"$dir/server.children\" 2>/dev/null)",
                "if [ -n \"$s\" ]; then",
                "  kill -TERM \"$s\" 2>/dev/null",
                "  i=0; while kill -0 \"$s\" 2>/dev/null && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done",
                "  kill -KILL \"$s\" $kids 2>/dev/null",
                "fi",
                "e=$(cat \"$dir/epmd.pid\" 2>/dev/null); [ -n \"$e\" ] && kill -TERM \"$e\" 2>/dev/null",
                "rm -rf \"$dir\"");
        return new ProcessBuilder("sh", "-c", script, "acemq-rabbitmq-watchdog",
                Long.toString(ProcessHandle.current().pid()), directory.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
    }

    private Map<String, String> writeConfiguration() throws IOException {
        Path home = Files.createDirectories(directory.resolve("home"));
        Path confD = Files.createDirectories(directory.resolve("conf.d"));
        Path mnesia = Files.createDirectories(directory.resolve("mnesia"));
        Path logs = Files.createDirectories(directory.resolve("log"));
        Path plugins = Files.writeString(directory.resolve("enabled_plugins"), "[rabbitmq_amqp1_0].\n");
        Path envFile = Files.writeString(directory.resolve("rabbitmq-env.conf"), "");
        Path definitions = Files.writeString(directory.resolve("definitions.json"), DeadLettering.definitionsJson());
        Path config = Files.writeString(directory.resolve("rabbitmq.config"),
                "[{rabbit, [{loopback_users, [<<\"guest\">>]},\n"
                        + "           {tcp_listeners, [{\"" + HOST + "\", " + amqpPort + "}]},\n"
                        + tlsConfiguration()
                        + "           {load_definitions, \"" + definitions + "\"}]}].\n");
        return Map.ofEntries(
                Map.entry("HOME", home.toString()), // the Erlang cookie lives here
                Map.entry("ERL_EPMD_PORT", Integer.toString(epmdPort)),
                Map.entry("RABBITMQ_NODENAME", nodeName),
                Map.entry("RABBITMQ_DIST_PORT", Integer.toString(distPort)),
                Map.entry("RABBITMQ_MNESIA_BASE", mnesia.toString()),
                Map.entry("RABBITMQ_LOG_BASE", logs.toString()),
                Map.entry("RABBITMQ_ENABLED_PLUGINS_FILE", plugins.toString()),
                Map.entry("RABBITMQ_CONF_ENV_FILE", envFile.toString()),
                Map.entry("RABBITMQ_CONFIG_FILE", config.toString()),
                Map.entry("RABBITMQ_CONFIG_FILES", confD.toString()),
                Map.entry("RABBITMQ_ADVANCED_CONFIG_FILE", directory.resolve("advanced.config").toString()),
                Map.entry("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "+sbwt none +sbwtdcpu none +sbwtdio none"));
    }

    /** @return the TLS listener's entries of the rabbit application's configuration, or nothing */
    private String tlsConfiguration() {
        if (tls == null) {
            return "";
        }
        return "           {ssl_listeners, [{\"" + HOST + "\", " + tlsPort + "}]},\n"
                + "           {ssl_options, [{cacertfile, \"" + tls.caPem() + "\"},\n"
                + "                          {certfile, \"" + tls.certificatePem() + "\"},\n"
                + "                          {keyfile, \"" + tls.keyPem() + "\"},\n"
                + "                          {verify, verify_peer},\n"
                + "                          {fail_if_no_peer_cert, false}]},\n";
    }

    private static int[] freePorts(int n) throws IOException {
        int[] ports = new int[n];
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                ports[i] = s.getLocalPort();
            }
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
        return ports;
    }

    private static long size(Path file) {
        try {
            return Files.exists(file) ? Files.size(file) : 0;
        } catch (IOException e) {
            return 0;
        }
    }

    private static boolean logContains(Path file, long offset, String text) {
        long size = size(file);
        if (size <= offset) {
            return false;
        }
        try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(file.toFile(), "r")) {
            byte[] bytes = new byte[(int) Math.min(size - offset, 16L << 20)];
            raf.seek(offset);
            raf.readFully(bytes);
            return new String(bytes, StandardCharsets.UTF_8).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    private static String tail(Path file) {
        try {
            if (!Files.exists(file)) {
                return "(none)";
            }
            List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    private static void pause(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the RabbitMQ node", e);
        }
    }

    private static void destroy(Process p) {
        if (p != null && p.isAlive()) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.onExit().completeOnTimeout(p, 5, TimeUnit.SECONDS).join();
        }
    }

    private static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // best effort
        }
    }

    /** The node process ended while starting. */
    private static final class NodeExited extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        NodeExited(String message) {
            super(message);
        }
    }
}

package org.acemq.amqp.store.redis;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;

/**
 * The Redis servers the tests run against, found in this order, never skipped:
 * <ol>
 *   <li>{@value #URL_ENV} (a standalone server; the tests write keys under their own prefixes) and
 *       {@value #CLUSTER_URL_ENV} (one node of a cluster; lettuce finds the rest);</li>
 *   <li>Testcontainers ({@code redis:7}) for the standalone server, when Docker is available (a cluster in containers
 *       announces container addresses the host cannot reach, so the cluster is not taken from there);</li>
 *   <li>private {@code redis-server} processes from the Debian package {@code redis-server}: their own ports on
 *       loopback and their own data directories, stopped when the JVM exits.</li>
 * </ol>
 * When none works the suite fails and says how to provide one. Public, in this module's test-jar, for the Spring Boot
 * starter's Redis tests.
 */
public final class RedisServers {

    /** A standalone server for the tests, {@code redis://host:port}. */
    public static final String URL_ENV = "ACEMQ_TEST_REDIS_URL";
    /** A node of a cluster for the tests, {@code redis://host:port}. */
    public static final String CLUSTER_URL_ENV = "ACEMQ_TEST_REDIS_CLUSTER_URL";
    private static final String HOW = "Provide Redis: set " + URL_ENV + "=redis://host:port (and " + CLUSTER_URL_ENV
            + "=redis://host:port for a cluster node), or run where Docker is available (Testcontainers), or "
            + "install the Debian package redis-server (apt-get install redis-server; the tests start private "
            + "processes on loopback, never the system service)";

    private static RedisURI standalone;
    private static List<RedisProcess> cluster;
    private static RedisURI clusterUri;

    private RedisServers() {
    }

    /** @return the shared standalone server */
    public static synchronized RedisURI standalone() {
        if (standalone == null) {
            List<String> failures = new ArrayList<>();
            String url = System.getenv(URL_ENV);
            if (url != null && !url.isBlank()) {
                standalone = RedisURI.create(url);
                return standalone;
            }
            standalone = fromTestcontainers(failures);
            if (standalone == null) {
                try {
                    standalone = RedisProcess.start(false).uri();
                } catch (RuntimeException e) {
                    failures.add("private redis-server: " + e.getMessage());
                }
            }
            if (standalone == null) {
                throw new IllegalStateException("No Redis server for the tests (" + String.join("; ", failures)
                        + "). " + HOW);
            }
        }
        return standalone;
    }

    /** @return a node of the shared three-master cluster (no replicas) */
    public static synchronized RedisURI cluster() {
        if (clusterUri == null) {
            String url = System.getenv(CLUSTER_URL_ENV);
            if (url != null && !url.isBlank()) {
                clusterUri = RedisURI.create(url);
                return clusterUri;
            }
            try {
                cluster = RedisProcess.startCluster(3, 0);
            } catch (RuntimeException e) {
                throw new IllegalStateException("No Redis Cluster for the tests (private redis-server processes: "
                        + e.getMessage() + "). " + HOW, e);
            }
            clusterUri = cluster.get(0).uri();
        }
        return clusterUri;
    }

    /** @return a cluster client that follows failovers quickly (what docs/redis-store.md recommends) */
    static RedisClusterClient clusterClient(RedisURI node) {
        RedisClusterClient client = RedisClusterClient.create(node);
        client.setOptions(ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enablePeriodicRefresh(Duration.ofSeconds(1))
                        .enableAllAdaptiveRefreshTriggers()
                        .adaptiveRefreshTriggersTimeout(Duration.ofMillis(200))
                        .build())
                .build());
        return client;
    }

    private static RedisURI fromTestcontainers(List<String> failures) {
        try {
            if (!org.testcontainers.DockerClientFactory.instance().isDockerAvailable()) {
                failures.add("Testcontainers: no Docker environment available");
                return null;
            }
            @SuppressWarnings("resource")
            org.testcontainers.containers.GenericContainer<?> container =
                    new org.testcontainers.containers.GenericContainer<>("redis:7").withExposedPorts(6379);
            container.start();
            Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "acemq-testcontainers-redis-stop"));
            return RedisURI.create(container.getHost(), container.getMappedPort(6379));
        } catch (Throwable t) {
            if (t instanceof VirtualMachineError vme) {
                throw vme;
            }
            failures.add("Testcontainers: " + t);
            return null;
        }
    }

    /** A private {@code redis-server} process on a loopback port, with its own data directory. */
    static final class RedisProcess {
        private final int port;
        private final Path dir;
        private final Process process;

        private RedisProcess(int port, Path dir, Process process) {
            this.port = port;
            this.dir = dir;
            this.process = process;
        }

        RedisURI uri() {
            return RedisURI.create("127.0.0.1", port);
        }

        int port() {
            return port;
        }

        /** Kills the process at once (SIGKILL), as a crash would. */
        void kill() {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        void stop() {
            kill();
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            } catch (IOException ignored) {
                // a temporary directory left behind
            }
        }

        static RedisProcess start(boolean clusterNode) {
            String server = executable("redis-server");
            RuntimeException last = null;
            for (int tries = 0; tries < 5; tries++) {
                int port = freePort();
                try {
                    Path dir = Files.createTempDirectory("acemq-redis-" + port + "-");
                    List<String> command = new ArrayList<>(List.of(server, "--port", Integer.toString(port),
                            "--bind", "127.0.0.1", "--dir", dir.toString(), "--save", "", "--appendonly", "yes",
                            "--appendfsync", "everysec", "--daemonize", "no", "--loglevel", "warning",
                            "--logfile", dir.resolve("redis.log").toString()));
                    if (clusterNode) {
                        // repl-diskless-sync-delay 0: a replica's first full sync starts at once instead of after
                        // the default 5 s wait for more replicas (startCluster waits for that sync either way)
                        command.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file",
                                dir.resolve("nodes.conf").toString(), "--cluster-node-timeout", "1000",
                                "--cluster-require-full-coverage", "yes", "--repl-diskless-sync-delay", "0"));
                    }
                    Process process = new ProcessBuilder(command).redirectErrorStream(true)
                            .redirectOutput(dir.resolve("stdout.log").toFile()).start();
                    RedisProcess redis = new RedisProcess(port, dir, process);
                    Runtime.getRuntime().addShutdownHook(new Thread(redis::stop, "acemq-redis-stop-" + port));
                    if (redis.awaitPing()) {
                        return redis;
                    }
                    String log = Files.exists(dir.resolve("redis.log")) ? Files.readString(dir.resolve("redis.log"))
                            : "";
                    redis.stop();
                    last = new IllegalStateException("redis-server on port " + port + " did not answer: " + log);
                } catch (IOException e) {
                    last = new IllegalStateException("cannot start " + server + ": " + e.getMessage(), e);
                }
            }
            throw last;
        }

        /**
         * Starts {@code masters} masters with {@code replicasEach} replicas each, joins them into a cluster, and
         * returns once the cluster is up and every replica has finished its first full sync with its master.
         *
         * <p>That last wait is what makes a failover possible at all: a replica that has never synchronised with its
         * master does not stand for election when the master dies (Redis counts its data as older than
         * {@code cluster-replica-validity-factor} allows and logs "Currently unable to failover: Disconnected from
         * master for longer than allowed"), so the master's slots stay without a master and, with full coverage
         * required, the whole cluster answers CLUSTERDOWN for good. {@code redis-cli --cluster create} returns, and
         * every node reports {@code cluster_state:ok}, before that sync has even started.
         */
        static List<RedisProcess> startCluster(int masters, int replicasEach) {
            List<RedisProcess> nodes = new ArrayList<>();
            for (int i = 0; i < masters * (1 + replicasEach); i++) {
                nodes.add(start(true));
            }
            List<String> command = new ArrayList<>(List.of(executable("redis-cli"), "--cluster", "create"));
            for (RedisProcess node : nodes) {
                command.add("127.0.0.1:" + node.port);
            }
            command.addAll(List.of("--cluster-replicas", Integer.toString(replicasEach), "--cluster-yes"));
            try {
                Process create = new ProcessBuilder(command).redirectErrorStream(true).start();
                String output = new String(create.getInputStream().readAllBytes());
                if (!create.waitFor(60, TimeUnit.SECONDS) || create.exitValue() != 0) {
                    nodes.forEach(RedisProcess::stop);
                    throw new IllegalStateException("redis-cli --cluster create failed: " + output);
                }
            } catch (IOException e) {
                nodes.forEach(RedisProcess::stop);
                throw new IllegalStateException("cannot run redis-cli: " + e.getMessage(), e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while creating the cluster", e);
            }
            for (RedisProcess node : nodes) {
                org.awaitility.Awaitility.await("cluster_state:ok on port " + node.port)
                        .atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                        .until(() -> node.info("CLUSTER INFO").contains("cluster_state:ok"));
            }
            if (replicasEach > 0) {
                awaitReplicasInSync(nodes, masters * replicasEach);
            }
            return nodes;
        }

        /** Waits until {@code replicas} nodes are replicas whose link to their master is up and fully synced. */
        private static void awaitReplicasInSync(List<RedisProcess> nodes, int replicas) {
            try {
                org.awaitility.Awaitility.await("replicas in sync with their masters")
                        .atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200))
                        .until(() -> nodes.stream().filter(RedisProcess::isSyncedReplica).count() == replicas);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                StringBuilder state = new StringBuilder();
                for (RedisProcess node : nodes) {
                    state.append("\n--- port ").append(node.port).append(":\n").append(node.info("INFO replication"));
                }
                nodes.forEach(RedisProcess::stop);
                throw new IllegalStateException("the cluster's replicas did not finish their first sync within 90 s"
                        + state, e);
            }
        }

        /** @return whether this node is a replica whose link to its master is up, with no sync in progress */
        boolean isSyncedReplica() {
            String replication = info("INFO replication");
            return replication.contains("role:slave") && replication.contains("master_link_status:up")
                    && replication.contains("master_sync_in_progress:0");
        }

        /** @return whether this node is a master (false also when it does not answer) */
        boolean isMaster() {
            return info("INFO replication").contains("role:master");
        }

        /** @return the end of this node's log, for failure messages */
        String logTail() {
            try {
                List<String> lines = Files.readAllLines(dir.resolve("redis.log"));
                return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
            } catch (IOException e) {
                return "(no log: " + e.getMessage() + ")";
            }
        }

        /** Runs a command on this node through redis-cli and returns its output (empty when it fails). */
        String info(String command) {
            List<String> args = new ArrayList<>(List.of(executable("redis-cli"), "-h", "127.0.0.1", "-p",
                    Integer.toString(port)));
            args.addAll(List.of(command.split(" ")));
            try {
                Process cli = new ProcessBuilder(args).redirectErrorStream(true).start();
                String output = new String(cli.getInputStream().readAllBytes());
                cli.waitFor(10, TimeUnit.SECONDS);
                return output;
            } catch (IOException e) {
                return "";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "";
            }
        }

        private boolean awaitPing() {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            RedisClient client = RedisClient.create(uri());
            try {
                while (System.nanoTime() < end && process.isAlive()) {
                    try (StatefulRedisConnection<String, String> connection = client.connect()) {
                        if ("PONG".equals(connection.sync().ping())) {
                            return true;
                        }
                    } catch (RuntimeException notYet) {
                        org.awaitility.Awaitility.await().pollDelay(Duration.ofMillis(50)).until(() -> true);
                    }
                }
                return false;
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }

        /** @return a loopback port that is free, and whose cluster bus port (10,000 above it) is free too */
        private static int freePort() {
            java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
            for (int tries = 0; tries < 200; tries++) {
                int port = random.nextInt(20_000, 40_000);
                if (isFree(port) && isFree(port + 10_000)) {
                    return port;
                }
            }
            throw new IllegalStateException("no free port pair between 20000 and 50000 on loopback");
        }

        private static boolean isFree(int port) {
            try (ServerSocket socket = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
                return true;
            } catch (IOException e) {
                return false;
            }
        }

        private static String executable(String name) {
            for (String dir : List.of("/usr/bin", "/usr/local/bin", "/usr/sbin")) {
                if (Files.isExecutable(Path.of(dir, name))) {
                    return Path.of(dir, name).toString();
                }
            }
            throw new IllegalStateException(name + " not found in /usr/bin, /usr/local/bin or /usr/sbin");
        }
    }
}

package org.acemq.amqp.benchmarks.e2e;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Private {@code redis-server} processes (Debian package {@code redis-server}) for the Redis rows: one standalone
 * server, or a Redis Cluster of M masters without replicas, each on a loopback port of its own with its own
 * directory under {@code --data-dir}. Every server runs with AOF on and {@code appendfsync everysec}: the setting
 * docs/redis-store.md's loss table shows keeping everything acknowledged when the Redis process dies and at most about
 * the last second when the machine does (the Debian package's own default, RDB snapshots only, can lose minutes).
 * No RDB snapshots ({@code save ""}), {@code maxmemory-policy noeviction} (the default the store docs require).
 *
 * <p>The integration tests' own launcher (idempotency-redis's test class {@code RedisServers}) is test code of that
 * module, not on this module's classpath; this one also reports the processes' CPU time and command counts.
 */
final class BenchRedis implements BenchEnv.StoreServer, AutoCloseable {

    private final List<Node> nodes;
    private final int masters;
    private final String description;
    private RedisClient standaloneClient;
    private RedisClusterClient clusterClient;

    private record Node(int port, Path dir, Process process, RedisClient admin,
                        StatefulRedisConnection<String, String> connection) {
        void stop() {
            try {
                connection.close();
                admin.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            } catch (RuntimeException alreadyClosed) {
                // stopped before (close, then the shutdown hook)
            }
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException ignored) {
                // left behind under --data-dir
            }
        }
    }

    private BenchRedis(List<Node> nodes, int masters) {
        this.nodes = nodes;
        this.masters = masters;
        var sync = nodes.get(0).connection().sync();
        String version = field(sync.info("server"), "redis_version");
        description = "Redis " + version + " (private redis-server, Debian package redis-server), "
                + (masters == 0 ? "standalone" : "Redis Cluster of " + masters + " master" + (masters == 1 ? "" : "s")
                + ", no replicas") + ": appendonly=" + sync.configGet("appendonly").get("appendonly")
                + ", appendfsync=" + sync.configGet("appendfsync").get("appendfsync") + ", save=\""
                + sync.configGet("save").get("save") + "\", maxmemory-policy="
                + sync.configGet("maxmemory-policy").get("maxmemory-policy") + ", directory on "
                + BenchEnv.fileSystem(nodes.get(0).dir());
    }

    /**
     * @param masters 0 for a standalone server, else the masters of a cluster (no replicas)
     * @param dataParent where the servers' directories go (a real disk: the AOF is written there)
     * @return the running server(s)
     */
    static BenchRedis start(int masters, Path dataParent) throws IOException, InterruptedException {
        List<Node> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < Math.max(1, masters); i++) {
                nodes.add(startNode(masters > 0, dataParent));
            }
            if (masters > 0) {
                // slots split evenly, then the nodes meet; works for one master too (redis-cli --cluster create
                // wants three)
                int per = 16384 / masters;
                for (int i = 0; i < masters; i++) {
                    int from = i * per;
                    int to = i == masters - 1 ? 16383 : (i + 1) * per - 1;
                    List<Integer> slots = new ArrayList<>();
                    for (int s = from; s <= to; s++) {
                        slots.add(s);
                    }
                    nodes.get(i).connection().sync().clusterAddSlots(slots.stream().mapToInt(Integer::intValue)
                            .toArray());
                }
                for (int i = 1; i < masters; i++) {
                    nodes.get(i).connection().sync().clusterMeet("127.0.0.1", nodes.get(0).port());
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                for (Node n : nodes) {
                    while (!n.connection().sync().clusterInfo().contains("cluster_state:ok")
                            || !n.connection().sync().clusterInfo().contains("cluster_known_nodes:" + masters)) {
                        if (System.nanoTime() > deadline) {
                            throw new IllegalStateException("Redis Cluster of " + masters + " did not reach "
                                    + "cluster_state:ok within 60 s: " + n.connection().sync().clusterInfo());
                        }
                        Thread.sleep(100);
                    }
                }
            }
            return new BenchRedis(nodes, masters);
        } catch (IOException | InterruptedException | RuntimeException e) {
            nodes.forEach(Node::stop);
            throw e;
        }
    }

    private static Node startNode(boolean clusterNode, Path dataParent) throws IOException, InterruptedException {
        String server = executable("redis-server");
        Files.createDirectories(dataParent);
        IOException last = null;
        for (int tries = 0; tries < 5; tries++) {
            int port = freePort();
            Path dir = Files.createTempDirectory(dataParent.toAbsolutePath(), "redis-" + port + "-");
            List<String> command = new ArrayList<>(List.of(server, "--port", Integer.toString(port), "--bind",
                    "127.0.0.1", "--dir", dir.toString(), "--save", "", "--appendonly", "yes", "--appendfsync",
                    "everysec", "--maxmemory-policy", "noeviction", "--daemonize", "no", "--loglevel", "warning",
                    "--logfile", dir.resolve("redis.log").toString()));
            if (clusterNode) {
                command.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file",
                        dir.resolve("nodes.conf").toString(), "--cluster-node-timeout", "5000"));
            }
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("stdout.log").toFile()).start();
            RedisClient admin = RedisClient.create(RedisURI.create("127.0.0.1", port));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < deadline && process.isAlive()) {
                try {
                    StatefulRedisConnection<String, String> connection = admin.connect();
                    Node node = new Node(port, dir, process, admin, connection);
                    Runtime.getRuntime().addShutdownHook(new Thread(node::stop, "bench-redis-stop-" + port));
                    return node;
                } catch (RuntimeException notYet) {
                    Thread.sleep(50);
                }
            }
            admin.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            process.destroyForcibly();
            last = new IOException("redis-server on port " + port + " did not answer within 20 s (see "
                    + dir.resolve("redis.log") + ")");
        }
        throw last;
    }

    /** @return the client the store is built on: a {@link RedisClient} or a {@link RedisClusterClient} */
    Object client() {
        if (masters == 0) {
            if (standaloneClient == null) {
                standaloneClient = RedisClient.create(RedisURI.create("127.0.0.1", nodes.get(0).port()));
            }
            return standaloneClient;
        }
        if (clusterClient == null) {
            clusterClient = clusterClient("127.0.0.1", nodes.get(0).port());
        }
        return clusterClient;
    }

    /**
     * @param host a node's host
     * @param port a node's port
     * @return a cluster client with the topology refresh docs/redis-store.md recommends for a cluster
     */
    static RedisClusterClient clusterClient(String host, int port) {
        RedisClusterClient client = RedisClusterClient.create(RedisURI.create(host, port));
        client.setOptions(ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enablePeriodicRefresh(Duration.ofSeconds(10))
                        .enableAllAdaptiveRefreshTriggers()
                        .build())
                .build());
        return client;
    }

    /** @return the port of the standalone server, or of the cluster's first master */
    int port() {
        return nodes.get(0).port();
    }

    int masters() {
        return masters;
    }

    String description() {
        return description;
    }

    @Override
    public long serverCpuNanos() {
        long sum = 0;
        for (Node n : nodes) {
            long c = BenchEnv.treeCpuNanos(n.process().pid());
            if (c < 0) {
                return -1;
            }
            sum += c;
        }
        return sum;
    }

    /** @return CPU time of each server so far, in nanoseconds, in node order */
    long[] cpuByNode() {
        long[] out = new long[nodes.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = BenchEnv.treeCpuNanos(nodes.get(i).process().pid());
        }
        return out;
    }

    /**
     * @return script calls ({@code EVALSHA} and {@code EVAL}, from {@code INFO commandstats}: one per store call, so
     *     the round trips) and all commands processed ({@code total_commands_processed}, which counts the commands a
     *     script runs too) so far, each summed over the servers; each read adds its own INFO command to the second
     */
    long[] commands() {
        long scripts = 0;
        long total = 0;
        for (Node n : nodes) {
            var sync = n.connection().sync();
            total += Long.parseLong(field(sync.info("stats"), "total_commands_processed"));
            String stats = sync.info("commandstats");
            for (String cmd : List.of("cmdstat_evalsha:", "cmdstat_eval:")) {
                for (String line : stats.split("\r?\n")) {
                    if (line.startsWith(cmd)) {
                        String calls = line.substring(line.indexOf("calls=") + 6);
                        scripts += Long.parseLong(calls.substring(0, calls.indexOf(',')));
                    }
                }
            }
        }
        return new long[] {scripts, total};
    }

    /** @return how many servers {@link #commands()} reads (and so how many INFO commands each read adds) */
    int servers() {
        return nodes.size();
    }

    /** Deletes every key on every server (between measurements, so memory does not grow over the run). */
    void flushAll() {
        for (Node n : nodes) {
            n.connection().sync().flushall();
        }
    }

    private static String field(String info, String name) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(name + ":")) {
                return line.substring(name.length() + 1).trim();
            }
        }
        throw new IllegalStateException("no " + name + " in INFO: " + info);
    }

    @Override
    public void close() {
        if (standaloneClient != null) {
            standaloneClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        if (clusterClient != null) {
            clusterClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        nodes.forEach(Node::stop);
    }

    private static int freePort() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int tries = 0; tries < 200; tries++) {
            int port = random.nextInt(20_000, 40_000);
            if (free(port) && free(port + 10_000)) {
                return port;
            }
        }
        throw new IllegalStateException("no free loopback port pair (port and cluster bus port) in 20000-50000");
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
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
        throw new IllegalStateException(name + " not found: install the Debian package redis-server "
                + "(apt-get install redis-server; the benchmark starts private processes, never the system service)");
    }
}

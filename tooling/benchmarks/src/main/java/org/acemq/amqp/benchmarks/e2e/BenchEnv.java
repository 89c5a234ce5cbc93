package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Processes and machine facts the benchmarks share: the broker JVM, PostgreSQL, CPU time, load, the machine. */
public final class BenchEnv {

    private BenchEnv() {
    }

    /** @return the java launcher of this JVM */
    public static String javaCommand() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** @return process CPU time (user + system) of a process in nanoseconds, or -1 if unknown */
    public static long cpuNanos(ProcessHandle process) {
        return process.info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
    }

    /**
     * A process's scheduler counters from /proc: user and system CPU time and context switches summed over its
     * threads (live threads only: a thread that ended in between is missing from the second snapshot).
     *
     * @param userNanos CPU time in user mode
     * @param systemNanos CPU time in the kernel
     * @param contextSwitches voluntary plus involuntary context switches
     */
    public record Sched(long userNanos, long systemNanos, long contextSwitches) {
        /** @return zeros when /proc cannot be read (not Linux) */
        public static Sched of(long pid) {
            try {
                String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split("\\s+");
                long tick = 10_000_000L; // USER_HZ = 100 on Linux
                long user = Long.parseLong(f[11]) * tick;
                long system = Long.parseLong(f[12]) * tick;
                long switches = 0;
                try (var tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
                    for (Path t : (Iterable<Path>) tasks::iterator) {
                        try {
                            for (String line : Files.readAllLines(t.resolve("status"))) {
                                if (line.startsWith("voluntary_ctxt_switches:")
                                        || line.startsWith("nonvoluntary_ctxt_switches:")) {
                                    switches += Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                                }
                            }
                        } catch (IOException | RuntimeException ended) {
                            // the thread ended while we looked
                        }
                    }
                }
                return new Sched(user, system, switches);
            } catch (IOException | RuntimeException e) {
                return new Sched(0, 0, 0);
            }
        }

        /** @return this minus {@code before} */
        public Sched since(Sched before) {
            return new Sched(userNanos - before.userNanos, systemNanos - before.systemNanos,
                    contextSwitches - before.contextSwitches);
        }
    }

    /**
     * CPU time of a process and of all its descendants, living or ended: its own user + system time, the time of
     * the children it has already waited for (which the kernel adds to the parent), and the same for every living
     * child. For a PostgreSQL postmaster this covers the backends, including those that exited in between.
     *
     * @param pid the root process
     * @return nanoseconds, or -1 when /proc cannot be read
     */
    public static long treeCpuNanos(long pid) {
        long own = ownAndReapedCpuNanos(pid);
        if (own < 0) {
            return -1;
        }
        long sum = own;
        Optional<ProcessHandle> root = ProcessHandle.of(pid);
        if (root.isPresent()) {
            for (ProcessHandle child : (Iterable<ProcessHandle>) root.get().descendants()::iterator) {
                long c = ownAndReapedCpuNanos(child.pid());
                if (c > 0) {
                    sum += c;
                }
            }
        }
        return sum;
    }

    /** utime + stime + cutime + cstime from /proc/PID/stat, in nanoseconds; -1 if unreadable. */
    static long ownAndReapedCpuNanos(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split("\\s+");
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
            return ticks * 10_000_000L; // USER_HZ = 100 on Linux
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * @param path a file or directory
     * @return its file system type and device from /proc/mounts (longest mount point that contains it), e.g.
     *         {@code ext4 on /dev/vda}; a memory file system makes fsync free, so the report says so
     */
    public static String fileSystem(Path path) {
        try {
            return fileSystem(path, Files.readAllLines(Path.of("/proc/mounts")));
        } catch (IOException | RuntimeException e) {
            return "file system unknown";
        }
    }

    /** {@link #fileSystem(Path)} over the given lines of /proc/mounts. */
    static String fileSystem(Path path, List<String> mounts) {
        Path abs = path.toAbsolutePath().normalize();
        String best = null;
        int bestLength = -1;
        for (String line : mounts) {
            String[] f = line.split(" ");
            if (f.length >= 3 && abs.startsWith(Path.of(f[1])) && f[1].length() > bestLength) {
                bestLength = f[1].length();
                best = f[2] + " on " + f[0];
            }
        }
        if (best == null) {
            return "file system unknown";
        }
        return best.startsWith("tmpfs ") || best.startsWith("ramfs ") ? best + ": IN MEMORY, fsync costs nothing"
                : best;
    }

    /**
     * Prints a benchmark's Markdown report and writes it to {@code out} (creating its directory).
     *
     * @param out the report file
     * @param text the report
     * @throws IOException if the file cannot be written
     */
    public static void printAndWrite(Path out, String text) throws IOException {
        System.out.println();
        System.out.println(text);
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        Files.writeString(out, text);
        System.out.println("(written to " + out.toAbsolutePath() + ")");
    }

    /** @return the 1-, 5- and 15-minute load averages as printed by /proc/loadavg */
    public static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " / " + f[1] + " / " + f[2];
        } catch (IOException | RuntimeException e) {
            return "n/a";
        }
    }

    /** @return one line describing the machine and the JVM */
    public static String machine() {
        String cpu = "unknown CPU";
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    cpu = line.substring(line.indexOf(':') + 1).trim();
                    break;
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // not Linux
        }
        long memGb = -1;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemTotal:")) {
                    memGb = Math.round(Long.parseLong(line.replaceAll("\\D+", "")) / 1024.0 / 1024.0);
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // not Linux
        }
        return Runtime.getRuntime().availableProcessors() + " CPUs (" + cpu + "), " + memGb + " GB RAM, "
                + System.getProperty("os.name") + " " + System.getProperty("os.version") + ", JDK "
                + System.getProperty("java.runtime.version");
    }

    /**
     * A fixed-size HikariCP pool with the server's own settings (no per-session SET), as every benchmark's store uses.
     *
     * @param url the JDBC URL
     * @param user the user, or null
     * @param password the password, or null
     * @param size connections, all opened up front
     * @param name the pool's name, after {@code bench-}
     * @return the pool
     */
    public static HikariDataSource pool(String url, String user, String password, int size, String name) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setPoolName("bench-" + name);
        return new HikariDataSource(config);
    }

    // ------------------------------------------------------------------ broker

    /** Embedded Artemis in its own JVM ({@link BenchBrokerMain}), stopped by {@link #close()}. */
    public static final class Broker implements AutoCloseable {
        private final Process process;
        private final int port;
        private final boolean persistent;
        private final String config;

        private Broker(Process process, int port, boolean persistent, String config) {
            this.process = process;
            this.port = port;
            this.persistent = persistent;
            this.config = config;
        }

        /**
         * @param persistent whether the broker keeps a journal on disk (Artemis's defaults: synced writes)
         * @param jvmArgs heap and GC options for the broker JVM
         * @param dataParent the directory under which the broker makes (and on exit deletes) its journal directory
         * @return the running broker
         * @throws IOException if it does not start
         */
        public static Broker start(boolean persistent, List<String> jvmArgs, Path dataParent) throws IOException {
            return start(persistent, jvmArgs, dataParent, 0);
        }

        /**
         * As {@link #start(boolean, List, Path)}, with the broker's delivery attempts before it dead-letters a message.
         *
         * @param maxDeliveryAttempts the broker's limit, or 0 for its default
         * @return the running broker
         * @throws IOException if it does not start
         */
        public static Broker start(boolean persistent, List<String> jvmArgs, Path dataParent, int maxDeliveryAttempts)
                throws IOException {
            Files.createDirectories(dataParent);
            List<String> cmd = new ArrayList<>();
            cmd.add(javaCommand());
            cmd.addAll(jvmArgs);
            cmd.add("-Djava.io.tmpdir=" + dataParent.toAbsolutePath());
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
            cmd.add(BenchBrokerMain.class.getName());
            cmd.add(Boolean.toString(persistent));
            if (maxDeliveryAttempts != 0) {
                cmd.add(Integer.toString(maxDeliveryAttempts));
            }
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
            Process p = pb.start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String config = "";
            String line = out.readLine();
            // the broker may log before it is ready (Artemis's critical analyzer warns on a loaded box): skip that
            for (int skipped = 0; line != null && !line.startsWith("READY port=") && skipped < 100; skipped++) {
                if (line.startsWith("CONFIG ")) {
                    config = line.substring("CONFIG ".length()).trim();
                } else {
                    System.err.println("broker: " + line);
                }
                line = out.readLine();
            }
            if (line == null || !line.startsWith("READY port=")) {
                p.destroyForcibly();
                throw new IOException("broker did not start (line: " + line + ")");
            }
            return new Broker(p, Integer.parseInt(line.substring("READY port=".length()).trim()), persistent, config);
        }

        /** @return the broker's journal settings as it printed them, plus the file system of its journal */
        public String config() {
            int dir = config.indexOf("journal-dir=");
            if (dir < 0 || !persistent) {
                return config;
            }
            return config + " (" + fileSystem(Path.of(config.substring(dir + "journal-dir=".length()).trim())) + ")";
        }

        public int port() {
            return port;
        }

        public boolean persistent() {
            return persistent;
        }

        public ProcessHandle handle() {
            return process.toHandle();
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
    }

    // ------------------------------------------------------------------ PostgreSQL

    /** A store's server whose CPU time a measurement counts (PostgreSQL, MariaDB, the redis-server processes). */
    public interface StoreServer {
        /** @return CPU time (user + system) of all the server's processes so far in nanoseconds, or -1 */
        long serverCpuNanos();
    }

    /** A PostgreSQL to benchmark against: the one named by a JDBC URL, or a durable embedded one started here. */
    public static final class Postgres implements AutoCloseable, StoreServer {
        private final String url;
        private final String user;
        private final String password;
        private final EmbeddedPostgres embedded;
        private final String description;
        private final long postmasterPid;
        private final HikariDataSource monitor;
        private final Map<Integer, Long> poolOverhead = new HashMap<>();

        private Postgres(String url, String user, String password, EmbeddedPostgres embedded) throws SQLException {
            this.url = url;
            this.user = user;
            this.password = password;
            this.embedded = embedded;
            this.monitor = pool(1, "monitor");
            try (Connection c = monitor.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT current_setting('server_version'), current_setting('fsync'),"
                         + " current_setting('synchronous_commit'), current_setting('wal_sync_method'),"
                         + " current_setting('data_directory'), pg_backend_pid()")) {
                rs.next();
                Path dataDirectory = Path.of(rs.getString(5));
                postmasterPid = postmaster(rs.getLong(6));
                description = "PostgreSQL " + rs.getString(1) + (embedded != null ? " (embedded, zonky)" : " (" + url
                        + ")") + ": fsync=" + rs.getString(2) + ", synchronous_commit=" + rs.getString(3)
                        + ", wal_sync_method=" + rs.getString(4) + ", data directory on "
                        + (Files.isDirectory(dataDirectory) ? fileSystem(dataDirectory) : "another machine")
                        + (postmasterPid > 0 ? "" : "; server CPU not measurable (its processes are not visible here)");
            } catch (SQLException | RuntimeException e) {
                monitor.close();
                throw e;
            }
        }

        /** @return the postmaster's pid when the server runs on this machine and is visible in /proc, else -1 */
        private static long postmaster(long backendPid) {
            return ProcessHandle.of(backendPid).flatMap(ProcessHandle::parent)
                    .filter(p -> p.info().command().map(c -> c.contains("postgres")).orElse(false))
                    .map(ProcessHandle::pid).orElse(-1L);
        }

        /**
         * @param url a jdbc:postgresql: URL, or null to start an embedded server with fsync and synchronous_commit on
         *            whose data directory is under {@code tooling/benchmarks/target/bench-data}
         * @return the server
         * @throws IOException if the embedded server does not start
         * @throws SQLException if the server cannot be reached
         */
        public static Postgres open(String url, String user, String password) throws IOException, SQLException {
            return open(url, user, password, Path.of("tooling", "benchmarks", "target", "bench-data"));
        }

        /**
         * @param url a jdbc:postgresql: URL, or null to start an embedded server with fsync and synchronous_commit on
         * @param dataParent where an embedded server's data directory goes (a real disk: fsync must cost what it
         *                   costs); it is deleted when the server stops
         * @return the server
         * @throws IOException if the embedded server does not start
         * @throws SQLException if the server cannot be reached
         */
        public static Postgres open(String url, String user, String password, Path dataParent)
                throws IOException, SQLException {
            if (url != null) {
                return new Postgres(url, user, password, null);
            }
            Files.createDirectories(dataParent);
            // zonky's defaults favour speed (fsync off); a durability benchmark needs the real thing.
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setDataDirectory(Files.createTempDirectory(dataParent.toAbsolutePath(), "postgres-"))
                    .setCleanDataDirectory(true)
                    .setPGStartupWait(Duration.ofSeconds(90))
                    .setServerConfig("max_connections", "200")
                    .setServerConfig("fsync", "on")
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("full_page_writes", "on")
                    .setServerConfig("shared_buffers", "256MB")
                    .start();
            return new Postgres(pg.getJdbcUrl("postgres", "postgres"), "postgres", null, pg);
        }

        /**
         * Committed transactions of this database so far (pg_stat_database.xact_commit). The statistics reach the
         * view late (a backend reports at most every 500 ms, an idle one only at its next transaction or when it
         * exits, and a reader may see a view up to 500 ms old), so call this once the measured pool is closed: it
         * reads until two reads 600 ms apart differ by at most the monitor's own query. Each call adds one or two
         * commits of its own.
         *
         * @return the count now
         * @throws SQLException if the server cannot be read
         * @throws InterruptedException if interrupted while waiting for the statistics to settle
         */
        public long settledCommits() throws SQLException, InterruptedException {
            long commits = commits();
            for (int i = 0; i < 10; i++) {
                Thread.sleep(600);
                long again = commits();
                boolean settled = again - commits <= 1;
                commits = again;
                if (settled) {
                    break;
                }
            }
            return commits;
        }

        /**
         * Commits that opening and closing an idle pool of this size costs with nothing else running: the
         * connections' own set-up (the driver's and HikariCP's first queries) and the harness's reads around it.
         * Measured once per size and subtracted from a measurement's count, which pays the same.
         *
         * @param size the pool size
         * @return the commits an idle pool's life adds to {@link #settledCommits()} deltas
         * @throws SQLException if the server cannot be read
         * @throws InterruptedException if interrupted while waiting
         */
        public long poolOverhead(int size) throws SQLException, InterruptedException {
            Long known = poolOverhead.get(size);
            if (known != null) {
                return known;
            }
            long before = settledCommits();
            try (HikariDataSource p = pool(size, "calibration")) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (p.getHikariPoolMXBean().getTotalConnections() < size && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
            }
            long overhead = settledCommits() - before;
            poolOverhead.put(size, overhead);
            return overhead;
        }

        /** @return the calibrations made so far, e.g. {@code 39 commits for a pool of 8} */
        public String poolOverheadText() {
            StringBuilder sb = new StringBuilder();
            poolOverhead.forEach((size, commits) -> sb.append(sb.length() == 0 ? "" : ", ").append(commits)
                    .append(" commits for a pool of ").append(size));
            return sb.length() == 0 ? "none" : sb.toString();
        }

        /**
         * Runs one statement on the monitor connection (schema set-up and clean-up between measurements).
         *
         * @param sql the statement
         * @throws SQLException if it fails
         */
        public void execute(String sql) throws SQLException {
            try (Connection c = monitor.getConnection(); Statement s = c.createStatement()) {
                s.execute(sql);
            }
        }

        /** @return CPU time of the server's processes (postmaster and all its children, living or ended), or -1 */
        @Override
        public long serverCpuNanos() {
            return postmasterPid > 0 ? treeCpuNanos(postmasterPid) : -1;
        }

        private long commits() throws SQLException {
            // autocommit: each query is its own transaction, so it reads a fresh statistics snapshot
            try (Connection c = monitor.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery(
                         "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")) {
                rs.next();
                return rs.getLong(1);
            }
        }

        public String url() {
            return url;
        }

        public String user() {
            return user;
        }

        public String password() {
            return password;
        }

        public String description() {
            return description;
        }

        /**
         * @return a pool with the server's own settings (no per-session SET: it would be a commit of its own; the
         *         description shows the server's synchronous_commit)
         */
        public HikariDataSource pool(int size, String name) {
            return BenchEnv.pool(url, user, password, size, name);
        }

        @Override
        public void close() throws IOException {
            monitor.close();
            if (embedded != null) {
                embedded.close();
            }
        }
    }
}

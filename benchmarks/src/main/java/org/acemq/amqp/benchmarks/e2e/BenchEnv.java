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
import java.util.List;
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

    // ------------------------------------------------------------------ broker

    /** Embedded Artemis in its own JVM ({@code EmbeddedArtemisMain}), stopped by {@link #close()}. */
    public static final class Broker implements AutoCloseable {
        private final Process process;
        private final int port;
        private final boolean persistent;

        private Broker(Process process, int port, boolean persistent) {
            this.process = process;
            this.port = port;
            this.persistent = persistent;
        }

        /**
         * @param persistent whether the broker journals (messages are sent non-durable either way)
         * @param jvmArgs heap and GC options for the broker JVM
         * @return the running broker
         * @throws IOException if it does not start
         */
        public static Broker start(boolean persistent, List<String> jvmArgs) throws IOException {
            List<String> cmd = new ArrayList<>();
            cmd.add(javaCommand());
            cmd.addAll(jvmArgs);
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
            cmd.add("org.acemq.amqp.testinfra.EmbeddedArtemisMain");
            cmd.add("--persistent");
            cmd.add(Boolean.toString(persistent));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
            Process p = pb.start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            if (line == null || !line.startsWith("READY port=")) {
                p.destroyForcibly();
                throw new IOException("broker did not start (first line: " + line + ")");
            }
            return new Broker(p, Integer.parseInt(line.substring("READY port=".length()).trim()), persistent);
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

    /** A PostgreSQL to benchmark against: the one named by a JDBC URL, or a durable embedded one started here. */
    public static final class Postgres implements AutoCloseable {
        private final String url;
        private final String user;
        private final String password;
        private final EmbeddedPostgres embedded;
        private final String description;

        private Postgres(String url, String user, String password, EmbeddedPostgres embedded) throws SQLException {
            this.url = url;
            this.user = user;
            this.password = password;
            this.embedded = embedded;
            try (HikariDataSource ds = pool(1, "probe"); Connection c = ds.getConnection();
                 Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT current_setting('server_version'), current_setting('fsync'),"
                         + " current_setting('synchronous_commit'), current_setting('wal_sync_method')")) {
                rs.next();
                description = "PostgreSQL " + rs.getString(1) + (embedded != null ? " (embedded, zonky)" : " (" + url
                        + ")") + ": fsync=" + rs.getString(2) + ", synchronous_commit=" + rs.getString(3)
                        + ", wal_sync_method=" + rs.getString(4);
            }
        }

        /**
         * @param url a jdbc:postgresql: URL, or null to start an embedded server with fsync and synchronous_commit on
         * @return the server
         * @throws IOException if the embedded server does not start
         * @throws SQLException if the server cannot be reached
         */
        public static Postgres open(String url, String user, String password) throws IOException, SQLException {
            if (url != null) {
                return new Postgres(url, user, password, null);
            }
            // zonky's defaults favour speed (fsync off); a durability benchmark needs the real thing.
            EmbeddedPostgres pg = EmbeddedPostgres.builder()
                    .setPGStartupWait(Duration.ofSeconds(90))
                    .setServerConfig("max_connections", "200")
                    .setServerConfig("fsync", "on")
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("full_page_writes", "on")
                    .setServerConfig("shared_buffers", "256MB")
                    .start();
            return new Postgres(pg.getJdbcUrl("postgres", "postgres"), "postgres", null, pg);
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

        /** @return a pool whose sessions run with synchronous_commit on */
        public HikariDataSource pool(int size, String name) {
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(url);
            config.setUsername(user);
            config.setPassword(password);
            config.setMaximumPoolSize(size);
            config.setMinimumIdle(size);
            config.setConnectionInitSql("SET synchronous_commit = on");
            config.setPoolName("bench-" + name);
            return new HikariDataSource(config);
        }

        @Override
        public void close() throws IOException {
            if (embedded != null) {
                embedded.close();
            }
        }
    }
}

package org.acemq.amqp.benchmarks.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import javax.sql.DataSource;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;

/**
 * Store-level group-commit probe: N caller threads each run {@code acquire(fresh id)} + {@code confirm(claim)} in a
 * loop against one {@link JdbcIdempotencyStore} with group commit on, and the probe reports what one message costs
 * and why: statements per kind with their average ids and latency (read through a DataSource wrapper, so the store
 * itself is unchanged), WAL flushes and commits per message ({@code pg_stat_wal}, {@code pg_stat_database}), and CPU
 * per message of this JVM (user/system, without the JIT compiler threads) and of the PostgreSQL server (all processes
 * of its postmaster, read from /proc, so only when the server runs on this machine).
 *
 * <pre>
 * java -cp benchmarks/target/acemq-benchmarks.jar org.acemq.amqp.benchmarks.store.GroupCommitProbe \
 *      [--threads 256] [--in-flight 4] [--batch 128] [--seconds 10] [--warmup-seconds 8] \
 *      [--jdbc-url jdbc:postgresql://127.0.0.1:5432/postgres] [--jdbc-user postgres] [--jdbc-password postgres]
 * </pre>
 * The connections turn {@code track_wal_io_timing} on for their own session (superuser only), to report the average
 * flush time; nothing global is changed. A fresh table is created and dropped.
 */
public final class GroupCommitProbe {

    private static final long TICK_NANOS = 10_000_000L; // USER_HZ = 100 on Linux

    private final Map<String, Stat> stats = new ConcurrentHashMap<>();

    /** Statements of one kind. */
    private static final class Stat {
        final LongAdder count = new LongAdder();
        final LongAdder ids = new LongAdder();
        final LongAdder nanos = new LongAdder();
    }

    private GroupCommitProbe() {
    }

    /**
     * @param args see the class comment
     * @throws Exception on any failure
     */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = new TreeMap<>(Map.of("--threads", "256", "--in-flight", "4", "--batch", "128",
                "--seconds", "10", "--warmup-seconds", "8", "--jdbc-url", "jdbc:postgresql://127.0.0.1:5432/postgres",
                "--jdbc-user", "postgres", "--jdbc-password", "postgres"));
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!o.containsKey(args[i])) {
                throw new IllegalArgumentException("unknown option " + args[i]);
            }
            o.put(args[i], args[i + 1]);
        }
        new GroupCommitProbe().run(Integer.parseInt(o.get("--threads")), Integer.parseInt(o.get("--in-flight")),
                Integer.parseInt(o.get("--batch")), Integer.parseInt(o.get("--seconds")),
                Integer.parseInt(o.get("--warmup-seconds")), o.get("--jdbc-url"), o.get("--jdbc-user"),
                o.get("--jdbc-password"));
    }

    private void run(int threads, int inFlight, int batch, int seconds, int warmup, String url, String user,
                     String password) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(inFlight + 2);
        config.setConnectionInitSql("SET track_wal_io_timing = on");
        try (HikariDataSource pool = new HikariDataSource(config);
             Connection monitor = DriverManager.getConnection(url, user, password)) {
            String postmaster = postmasterPid(monitor);
            String table = "acemq_probe_" + System.nanoTime();
            JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(instrumented(pool)).tableName(table)
                    .groupCommit(batch, inFlight).build();
            store.createSchema();
            AtomicLong sequence = new AtomicLong();
            AtomicLong done = new AtomicLong();
            AtomicBoolean stop = new AtomicBoolean();
            Thread[] callers = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                callers[i] = new Thread(() -> {
                    while (!stop.get()) {
                        Claim claim = store.acquire("m:" + sequence.incrementAndGet());
                        if (!store.confirm(claim)) {
                            throw new IllegalStateException("a fresh claim was not held at confirm: " + claim);
                        }
                        done.incrementAndGet();
                    }
                }, "probe-" + i);
                callers[i].start();
            }
            Thread.sleep(warmup * 1000L);
            stats.clear();
            long[] before = sample(monitor, postmaster, done);
            long start = System.nanoTime();
            Thread.sleep(seconds * 1000L);
            long[] after = sample(monitor, postmaster, done);
            double elapsed = (System.nanoTime() - start) / 1e9;
            stop.set(true);
            for (Thread t : callers) {
                t.join();
            }
            try (Statement s = monitor.createStatement()) {
                s.execute("DROP TABLE " + table);
            }
            report(threads, inFlight, batch, before, after, elapsed, postmaster != null);
        }
    }

    // sample layout: 0 messages, 1 JVM user ticks, 2 JVM system ticks, 3 JIT ticks, 4 server ticks, 5 server system
    // ticks, 6 WAL flushes, 7 WAL flush time µs, 8 commits, 9 WAL bytes, 10 JVM context switches
    private static long[] sample(Connection monitor, String postmaster, AtomicLong done) throws Exception {
        long[] s = new long[11];
        s[0] = done.get();
        long[] self = ticks(Path.of("/proc/self/stat"));
        s[1] = self[0];
        s[2] = self[1];
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    String stat = Files.readString(task.resolve("stat"));
                    if (stat.contains("Compiler")) {
                        long[] t = ticks(task.resolve("stat"));
                        s[3] += t[0] + t[1];
                    }
                    for (String line : Files.readAllLines(task.resolve("status"))) {
                        if (line.contains("ctxt_switches")) {
                            s[10] += Long.parseLong(line.split("\\s+")[1]);
                        }
                    }
                } catch (IOException | RuntimeException gone) {
                    // the thread ended meanwhile
                }
            }
        }
        if (postmaster != null) {
            try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
                for (Path p : procs) {
                    try {
                        String stat = Files.readString(p.resolve("stat"));
                        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                        if (p.getFileName().toString().equals(postmaster) || f[1].equals(postmaster)) {
                            s[4] += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                            s[5] += Long.parseLong(f[12]);
                        }
                    } catch (IOException | RuntimeException gone) {
                        // the process ended meanwhile
                    }
                }
            }
        }
        try (Statement st = monitor.createStatement();
             ResultSet rs = st.executeQuery("SELECT w.wal_sync, (w.wal_sync_time * 1000)::bigint, d.xact_commit, "
                     + "w.wal_bytes::bigint FROM pg_stat_wal w, pg_stat_database d "
                     + "WHERE d.datname = current_database()")) {
            rs.next();
            s[6] = rs.getLong(1);
            s[7] = rs.getLong(2);
            s[8] = rs.getLong(3);
            s[9] = rs.getLong(4);
        }
        return s;
    }

    /** @return {user, system} clock ticks of a /proc stat file */
    private static long[] ticks(Path stat) throws IOException {
        String text = Files.readString(stat);
        String[] f = text.substring(text.lastIndexOf(')') + 2).split(" ");
        return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
    }

    /** @return the postmaster's pid when the server runs on this machine, else null */
    private static String postmasterPid(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            String stat = Files.readString(Path.of("/proc", rs.getString(1), "stat"));
            return stat.substring(stat.lastIndexOf(')') + 2).split(" ")[1];
        } catch (IOException e) {
            return null;
        }
    }

    private void report(int threads, int inFlight, int batch, long[] a, long[] b, double seconds, boolean server) {
        double msgs = b[0] - a[0];
        double us = TICK_NANOS / 1e3;
        double flushes = b[6] - a[6];
        System.out.printf(Locale.ROOT, "threads %d, groupCommit(%d, %d): %,.0f msg/s%n", threads, batch, inFlight,
                msgs / seconds);
        System.out.printf(Locale.ROOT, "  JVM CPU %.1f us/msg without the JIT compiler threads (all threads: user %.1f, "
                        + "system %.1f, of which JIT %.1f), %.2f context switches/msg%n",
                ((b[1] - a[1]) + (b[2] - a[2]) - (b[3] - a[3])) * us / msgs, (b[1] - a[1]) * us / msgs,
                (b[2] - a[2]) * us / msgs, (b[3] - a[3]) * us / msgs, (b[10] - a[10]) / msgs);
        if (server) {
            System.out.printf(Locale.ROOT, "  PostgreSQL CPU %.1f us/msg (system %.1f)%n", (b[4] - a[4]) * us / msgs,
                    (b[5] - a[5]) * us / msgs);
        }
        System.out.printf(Locale.ROOT, "  WAL flushes %.4f/msg (avg %.3f ms), commits %.4f/msg, WAL %.0f B/msg "
                        + "(whole server)%n", flushes / msgs, flushes == 0 ? 0 : (b[7] - a[7]) / 1e3 / flushes,
                (b[8] - a[8]) / msgs, (b[9] - a[9]) / msgs);
        for (Map.Entry<String, Stat> e : new TreeMap<>(stats).entrySet()) {
            Stat s = e.getValue();
            long n = s.count.sum();
            System.out.printf(Locale.ROOT, "  %-16s %,7d statements (%.0f/s), %.1f ids each, %.2f ms each%n",
                    e.getKey(), n, n / seconds, (double) s.ids.sum() / n, s.nanos.sum() / 1e6 / n);
        }
    }

    // ------------------------------------------------------------------ statement statistics through a wrapper

    private static String kind(String sql) {
        boolean array = sql.contains("unnest(");
        String op = sql.contains("prior AS") ? "confirm(Claim)" : sql.contains("claimed AS") ? "acquire"
                : sql.contains("SET state = 2") ? "release" : "confirm";
        return op + (array ? "[]" : "");
    }

    private DataSource instrumented(DataSource target) {
        return proxy(DataSource.class, (p, m, a) -> {
            Object r = call(m, target, a);
            return m.getName().equals("getConnection") ? instrumented((Connection) r) : r;
        });
    }

    private Connection instrumented(Connection target) {
        return proxy(Connection.class, (p, m, a) -> {
            Object r = call(m, target, a);
            if (m.getName().equals("prepareStatement") && a.length == 1) {
                return instrumented((PreparedStatement) r, kind((String) a[0]));
            }
            return r;
        });
    }

    private PreparedStatement instrumented(PreparedStatement target, String kind) {
        int[] ids = {1};
        return proxy(PreparedStatement.class, (p, m, a) -> {
            if (m.getName().equals("setArray") && (Integer) a[0] == 1) {
                ids[0] = ((Object[]) ((Array) a[1]).getArray()).length;
            }
            if (!m.getName().startsWith("execute")) {
                return call(m, target, a);
            }
            long t0 = System.nanoTime();
            Object r = call(m, target, a);
            Stat s = stats.computeIfAbsent(kind, k -> new Stat());
            s.nanos.add(System.nanoTime() - t0);
            s.count.increment();
            s.ids.add(ids[0]);
            return r;
        });
    }

    @SuppressWarnings("unchecked")
    private static <T> T proxy(Class<T> type, InvocationHandler handler) {
        return (T) Proxy.newProxyInstance(GroupCommitProbe.class.getClassLoader(), new Class<?>[] {type}, handler);
    }

    private static Object call(Method m, Object target, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}

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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
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
 * Store-level probe of the JDBC store on a real PostgreSQL: caller threads run messages (claim + confirm of fresh ids)
 * in a loop against one {@link JdbcIdempotencyStore}, one configuration ("mode") after the other, each on a fresh
 * table, in the same run; the probe reports what one message costs and why: throughput and its ratio to the
 * single-statement path at the same thread count, commits and WAL flushes per message ({@code pg_stat_database},
 * {@code pg_stat_wal}), statements per kind with their average ids and latency (read through a DataSource wrapper, so
 * the store itself is unchanged), and CPU per message of this JVM (user/system, without the JIT compiler threads) and
 * of the PostgreSQL server (all processes of its postmaster, read from /proc, so only when the server runs on this
 * machine).
 *
 * <p>Modes ({@code --modes}, comma-separated):
 * <ul>
 *   <li>{@code single}: {@code acquire} + {@code confirm(Claim)} per message, group commit off (one statement each);</li>
 *   <li>{@code default}: the same calls on a store with every default (group commit on, decided by load);</li>
 *   <li>{@code group}: the same calls with {@code groupCommit(--batch, --in-flight)}, or
 *       {@code group:<maxBatch>:<maxInFlight>} with those limits;</li>
 *   <li>{@code batch:N}: each thread claims N fresh ids with one {@code acquireAll} and confirms them with one
 *       {@code confirmAll} (the runtime's batched path; default store settings).</li>
 * </ul>
 *
 * <pre>
 * java -cp tooling/benchmarks/target/acemq-benchmarks.jar org.acemq.amqp.benchmarks.store.GroupCommitProbe \
 *      [--modes single,default,batch:10,batch:100] [--threads 4 | --threads 1,4,16] [--pool 8] \
 *      [--in-flight 4] [--batch 128] [--seconds 10] [--warmup-seconds 8] \
 *      [--jdbc-url jdbc:postgresql://127.0.0.1:5432/postgres] [--jdbc-user postgres] [--jdbc-password postgres]
 * </pre>
 * The connections turn {@code track_wal_io_timing} on for their own session (superuser only), to report the average
 * flush time; nothing global is changed. Each mode's table is created and dropped.
 */
public final class GroupCommitProbe {

    private static final long TICK_NANOS = 10_000_000L; // USER_HZ = 100 on Linux

    private final Map<String, Stat> stats = new ConcurrentHashMap<>();
    private final List<String> summary = new ArrayList<>();
    private final Map<Integer, Double> singleRate = new HashMap<>();

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
        Map<String, String> o = new TreeMap<>(Map.ofEntries(Map.entry("--threads", "256"),
                Map.entry("--in-flight", "4"), Map.entry("--batch", "128"), Map.entry("--seconds", "10"),
                Map.entry("--warmup-seconds", "8"), Map.entry("--modes", "group"), Map.entry("--pool", "0"),
                Map.entry("--jdbc-url", "jdbc:postgresql://127.0.0.1:5432/postgres"),
                Map.entry("--jdbc-user", "postgres"), Map.entry("--jdbc-password", "postgres")));
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!o.containsKey(args[i])) {
                throw new IllegalArgumentException("unknown option " + args[i]);
            }
            o.put(args[i], args[i + 1]);
        }
        GroupCommitProbe probe = new GroupCommitProbe();
        for (String threads : o.get("--threads").split(",")) {
            for (String mode : o.get("--modes").split(",")) {
                probe.run(mode.strip(), Integer.parseInt(threads.strip()), Integer.parseInt(o.get("--in-flight")),
                        Integer.parseInt(o.get("--batch")), Integer.parseInt(o.get("--pool")),
                        Integer.parseInt(o.get("--seconds")), Integer.parseInt(o.get("--warmup-seconds")),
                        o.get("--jdbc-url"), o.get("--jdbc-user"), o.get("--jdbc-password"));
            }
        }
        System.out.println();
        System.out.println("| mode | threads | msg/s | ratio to single | commits/msg | WAL flushes/msg "
                + "| PostgreSQL CPU µs/msg | client CPU µs/msg | ids per statement |");
        System.out.println("|---|---|---|---|---|---|---|---|---|");
        probe.summary.forEach(System.out::println);
    }

    private void run(String mode, int threads, int inFlight, int batch, int poolSize, int seconds, int warmup,
                     String url, String user, String password) throws Exception {
        int perCall = mode.startsWith("batch:") ? Integer.parseInt(mode.substring("batch:".length())) : 1;
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize > 0 ? poolSize : mode.equals("group") ? inFlight + 2 : 8);
        config.setConnectionInitSql("SET track_wal_io_timing = on");
        try (HikariDataSource pool = new HikariDataSource(config);
             Connection monitor = DriverManager.getConnection(url, user, password)) {
            String postmaster = postmasterPid(monitor);
            String table = "acemq_probe_" + System.nanoTime();
            JdbcIdempotencyStore.Builder builder = JdbcIdempotencyStore.builder(instrumented(pool)).tableName(table);
            switch (mode) {
                case "single" -> builder.groupCommit(false);
                case "group" -> builder.groupCommit(batch, inFlight);
                default -> {
                    if (mode.startsWith("group:")) { // group:<maxBatch>:<maxInFlight>
                        String[] limits = mode.split(":");
                        builder.groupCommit(Integer.parseInt(limits[1]), Integer.parseInt(limits[2]));
                    } else if (!mode.equals("default") && !mode.startsWith("batch:")) {
                        throw new IllegalArgumentException("unknown mode " + mode);
                    }
                }
            }
            JdbcIdempotencyStore store = builder.build();
            store.createSchema();
            AtomicLong sequence = new AtomicLong();
            AtomicLong done = new AtomicLong();
            AtomicBoolean stop = new AtomicBoolean();
            Thread[] callers = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                callers[i] = new Thread(() -> {
                    List<String> ids = new ArrayList<>(perCall);
                    while (!stop.get()) {
                        if (perCall == 1 && !mode.startsWith("batch:")) {
                            Claim claim = store.acquire("m:" + sequence.incrementAndGet());
                            if (!store.confirm(claim)) {
                                throw new IllegalStateException("a fresh claim was not held at confirm: " + claim);
                            }
                            done.incrementAndGet();
                            continue;
                        }
                        ids.clear();
                        for (int k = 0; k < perCall; k++) {
                            ids.add("m:" + sequence.incrementAndGet());
                        }
                        List<Claim> claims = store.acquireAll(ids);
                        if (!store.confirmAll(claims).isEmpty()) {
                            throw new IllegalStateException("fresh claims were not held at confirm");
                        }
                        done.addAndGet(perCall);
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
                s.execute("DROP TABLE IF EXISTS " + store.outboxTableName()); // createSchema() made it too
            }
            String label = mode.equals("group") ? "group(" + batch + ", " + inFlight + ")" : mode;
            report(label, threads, before, after, elapsed, postmaster != null, store.toString());
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

    private void report(String mode, int threads, long[] a, long[] b, double seconds, boolean server, String store) {
        double msgs = b[0] - a[0];
        double us = TICK_NANOS / 1e3;
        double flushes = b[6] - a[6];
        double rate = msgs / seconds;
        if (mode.equals("single")) {
            singleRate.put(threads, rate);
        }
        double client = ((b[1] - a[1]) + (b[2] - a[2]) - (b[3] - a[3])) * us / msgs;
        double serverCpu = (b[4] - a[4]) * us / msgs;
        System.out.printf(Locale.ROOT, "%s, %d threads: %,.0f msg/s (%s)%n", mode, threads, rate, store);
        System.out.printf(Locale.ROOT, "  JVM CPU %.1f us/msg without the JIT compiler threads (all threads: user %.1f, "
                        + "system %.1f, of which JIT %.1f), %.2f context switches/msg%n",
                client, (b[1] - a[1]) * us / msgs, (b[2] - a[2]) * us / msgs, (b[3] - a[3]) * us / msgs,
                (b[10] - a[10]) / msgs);
        if (server) {
            System.out.printf(Locale.ROOT, "  PostgreSQL CPU %.1f us/msg (system %.1f)%n", serverCpu,
                    (b[5] - a[5]) * us / msgs);
        }
        System.out.printf(Locale.ROOT, "  WAL flushes %.4f/msg (avg %.3f ms), commits %.4f/msg, WAL %.0f B/msg "
                        + "(whole server)%n", flushes / msgs, flushes == 0 ? 0 : (b[7] - a[7]) / 1e3 / flushes,
                (b[8] - a[8]) / msgs, (b[9] - a[9]) / msgs);
        long statements = 0;
        long ids = 0;
        for (Map.Entry<String, Stat> e : new TreeMap<>(stats).entrySet()) {
            Stat s = e.getValue();
            long n = s.count.sum();
            statements += n;
            ids += s.ids.sum();
            System.out.printf(Locale.ROOT, "  %-16s %,7d statements (%.0f/s), %.1f ids each, %.2f ms each%n",
                    e.getKey(), n, n / seconds, (double) s.ids.sum() / n, s.nanos.sum() / 1e6 / n);
        }
        Double single = singleRate.get(threads);
        summary.add(String.format(Locale.ROOT, "| %s | %d | %,.0f | %s | %.3f | %.3f | %s | %.1f | %.1f |", mode,
                threads, rate, single == null ? "–" : String.format(Locale.ROOT, "%.2f", rate / single),
                (b[8] - a[8]) / msgs, flushes / msgs, server ? String.format(Locale.ROOT, "%.1f", serverCpu) : "–",
                client, statements == 0 ? 0.0 : (double) ids / statements));
    }

    // ------------------------------------------------------------------ statement statistics through a wrapper

    private static String kind(String sql) {
        boolean array = sql.contains("unnest(");
        if (sql.startsWith("CREATE") || sql.startsWith("SELECT pg_advisory")) {
            return "ddl";
        }
        String op = sql.contains("confirmed AS (\n  UPDATE") ? "confirm(held)" : sql.contains("prior AS") ? "confirm(Claim)" : sql.contains("claimed AS") ? "acquire"
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

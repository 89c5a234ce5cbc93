package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.apache.qpid.protonj2.client.Client;

/**
 * Scale-out: P consumer processes ({@link ScaleOutConsumerMain}, each its own JVM) on one queue and one store, for P
 * in {@code --processes} (1, 2, 4) and each store in {@code --stores} (PostgreSQL, MariaDB, Redis standalone, Redis
 * Cluster), with the broker in its own JVM ({@link BenchEnv.Broker}, persistent journal, durable messages, as the e2e
 * durable rows). {@code tooling/benchmarks/run.sh scaleout}.
 *
 * <p>Per measurement: a fresh queue pre-loaded with {@code --messages} durable messages and, for each consumer
 * process, a warm-up queue of {@code --warmup} messages; a fresh table (JDBC) or emptied servers (Redis). The P
 * processes start, consume their warm-up queues on the same store, and report ready; then the clock starts, they are
 * told to go, and it stops at the last settle in any of them, once their settled counts add up to the messages. CPU
 * time over that window is read from /proc for every consumer process, the broker and the store server. Afterwards
 * every process reports the message indices its handler saw: the run fails when a message was handled twice (in one
 * process or across processes), missed, settled otherwise than accepted, or left on the queue.
 *
 * <p>Every round measures each process count once, in the order given; the report gives medians over the rounds, and
 * each process count's ratio to one process as the median of the ratios within a round. The in-memory store has no
 * row: each process would have a store of its own, so nothing would de-duplicate across processes.
 *
 * <pre>
 * java -jar acemq-benchmarks.jar scaleout [--stores postgres,mariadb,redis,redis-cluster] [--processes 1,2,4]
 *      [--messages 20000 | --messages postgres=20000,mariadb=10000,...] [--rounds 3] [--warmup 2000]
 *      [--threads 4] [--pool 8] [--cluster-masters 3] [--consumer-jvm "-Xms256m -Xmx512m -XX:+UseG1GC"]
 *      [--broker-jvm "-Xms1g -Xmx2g -XX:+UseG1GC"] [--data-dir DIR] [--out FILE]
 * </pre>
 */
public final class ScaleOutBenchmark {

    /** Stores the mode knows, in their default order. */
    static final List<String> STORES = List.of("postgres", "mariadb", "redis", "redis-cluster");

    /** Options, all with defaults. */
    static final class Options {
        List<String> stores = STORES;
        List<Integer> processes = List.of(1, 2, 4);
        int messages = 20_000;
        Map<String, Integer> messagesPerStore = new LinkedHashMap<>();
        int rounds = 3;
        int warmup = 2_000;
        int threads = 4;
        int pool = 8;
        int clusterMasters = 3;
        List<String> consumerJvm = List.of("-Xms256m", "-Xmx512m", "-XX:+UseG1GC");
        List<String> brokerJvm = List.of("-Xms1g", "-Xmx2g", "-XX:+UseG1GC");
        Path dataDir = Path.of("tooling", "benchmarks", "target", "bench-data");
        Path out = Path.of("tooling", "benchmarks", "target", "scaleout-results.md");
        String command;

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value for " + a);
                }
                String v = args[++i];
                switch (a) {
                    case "--stores" -> o.stores = stores(v);
                    case "--processes" -> o.processes = processes(v);
                    case "--messages" -> messages(o, v);
                    case "--rounds" -> o.rounds = positive(a, v);
                    case "--warmup" -> o.warmup = nonNegative(a, v);
                    case "--threads" -> o.threads = positive(a, v);
                    case "--pool" -> o.pool = positive(a, v);
                    case "--cluster-masters" -> o.clusterMasters = positive(a, v);
                    case "--consumer-jvm" -> o.consumerJvm = List.of(v.trim().split("\\s+"));
                    case "--broker-jvm" -> o.brokerJvm = List.of(v.trim().split("\\s+"));
                    case "--data-dir" -> o.dataDir = Path.of(v);
                    case "--out" -> o.out = Path.of(v);
                    default -> throw new IllegalArgumentException("unknown option " + a + "; known: --stores, "
                            + "--processes, --messages, --rounds, --warmup, --threads, --pool, --cluster-masters, "
                            + "--consumer-jvm, --broker-jvm, --data-dir, --out");
                }
            }
            o.command = "tooling/benchmarks/run.sh scaleout" + (args.length == 0 ? "" : " " + String.join(" ", args));
            return o;
        }

        /** @return the messages of one measurement on {@code store} */
        int messages(String store) {
            return messagesPerStore.getOrDefault(store, messages);
        }

        private static List<String> stores(String v) {
            List<String> out = new ArrayList<>();
            for (String s : v.split(",")) {
                String store = s.trim();
                if (store.equals("memory") || store.equals("in-memory")) {
                    throw new IllegalArgumentException("--stores: the in-memory store cannot be shared between "
                            + "processes (each would de-duplicate only its own deliveries); known: " + STORES);
                }
                if (!STORES.contains(store)) {
                    throw new IllegalArgumentException("--stores: unknown store " + store + "; known: " + STORES);
                }
                if (!out.contains(store)) {
                    out.add(store);
                }
            }
            return List.copyOf(out);
        }

        private static List<Integer> processes(String v) {
            List<Integer> out = new ArrayList<>();
            for (String s : v.split(",")) {
                int p = positive("--processes", s.trim());
                if (!out.contains(p)) {
                    out.add(p);
                }
            }
            if (!out.contains(1)) {
                throw new IllegalArgumentException("--processes must include 1 (every ratio is to one process): " + v);
            }
            return List.copyOf(out);
        }

        private static void messages(Options o, String v) {
            if (!v.contains("=")) {
                o.messages = positive("--messages", v);
                return;
            }
            for (String entry : v.split(",")) {
                String[] kv = entry.split("=", 2);
                if (kv.length != 2) {
                    throw new IllegalArgumentException("--messages: expected N or store=N,...; got " + v);
                }
                String store = kv[0].trim();
                if (!STORES.contains(store)) {
                    throw new IllegalArgumentException("--messages: unknown store " + store + "; known: " + STORES);
                }
                o.messagesPerStore.put(store, positive("--messages", kv[1].trim()));
            }
        }

        private static int positive(String option, String value) {
            int n = Integer.parseInt(value);
            if (n < 1) {
                throw new IllegalArgumentException(option + " must be >= 1, but was " + value);
            }
            return n;
        }

        private static int nonNegative(String option, String value) {
            int n = Integer.parseInt(value);
            if (n < 0) {
                throw new IllegalArgumentException(option + " must be >= 0, but was " + value);
            }
            return n;
        }
    }

    /**
     * One measurement.
     *
     * @param processes consumer processes
     * @param messages messages consumed
     * @param nanos from the go to the last settle in any process
     * @param consumersCpu CPU time of all consumer processes together, -1 if unknown
     * @param brokerCpu CPU time of the broker JVM, -1 if unknown
     * @param storeCpu CPU time of the store server's processes, -1 if unknown
     */
    record Run(int processes, int messages, long nanos, long consumersCpu, long brokerCpu, long storeCpu) {
        double rate() {
            return messages * 1e9 / nanos;
        }

        double micros(long cpu) {
            return cpu < 0 ? Double.NaN : cpu / 1e3 / messages;
        }

        double totalMicros() {
            return micros(consumersCpu) + micros(brokerCpu) + micros(storeCpu);
        }

        /** @return CPU of consumers, broker and store server over the window, as a share of all the machine's cores */
        double machineShare(int cores) {
            return (consumersCpu + brokerCpu + storeCpu) / (double) nanos / cores;
        }
    }

    /**
     * What one consumer process reported after STOP.
     *
     * @param processed deliveries settled as processed
     * @param handled handler calls
     * @param other deliveries settled any other way
     * @param twice handler calls for an index this process had already seen
     * @param lastMicros wall clock of its last settle, epoch µs
     * @param ids the message indices its handler saw
     */
    record ChildResult(int processed, int handled, int other, int twice, long lastMicros, BitSet ids) {

        /** @return the result of a {@code RESULT ...} line */
        static ChildResult parse(String line) {
            Map<String, String> f = new LinkedHashMap<>();
            for (String part : line.substring("RESULT ".length()).trim().split(" ")) {
                int eq = part.indexOf('=');
                f.put(part.substring(0, eq), part.substring(eq + 1));
            }
            return new ChildResult(Integer.parseInt(f.get("processed")), Integer.parseInt(f.get("handled")),
                    Integer.parseInt(f.get("other")), Integer.parseInt(f.get("twice")),
                    Long.parseLong(f.get("lastMicros")), BitSet.valueOf(Base64.getDecoder().decode(f.get("ids"))));
        }
    }

    /**
     * Fails unless the processes together handled each of the {@code n} messages exactly once.
     *
     * @param what the measurement, for the message
     * @param n messages on the queue, indices 0 to n - 1
     * @param results one per consumer process
     * @throws IllegalStateException naming what went wrong
     */
    static void verify(String what, int n, List<ChildResult> results) {
        BitSet union = new BitSet();
        long processed = 0;
        long handled = 0;
        long overlap = 0;
        for (int i = 0; i < results.size(); i++) {
            ChildResult r = results.get(i);
            if (r.other() > 0) {
                throw new IllegalStateException(what + ": consumer process " + i + " settled " + r.other()
                        + " deliveries otherwise than accepted as processed");
            }
            if (r.twice() > 0) {
                throw new IllegalStateException(what + ": consumer process " + i + " handled " + r.twice()
                        + " messages twice");
            }
            BitSet both = (BitSet) union.clone();
            both.and(r.ids());
            overlap += both.cardinality();
            union.or(r.ids());
            processed += r.processed();
            handled += r.handled();
        }
        if (overlap > 0) {
            throw new IllegalStateException(what + ": " + overlap + " messages were handled by two consumer processes "
                    + "(the shared store let a duplicate through)");
        }
        if (union.length() > n) {
            throw new IllegalStateException(what + ": a message index " + (union.length() - 1) + " beyond the " + n
                    + " sent was handled");
        }
        if (union.cardinality() != n || handled != n || processed != n) {
            throw new IllegalStateException(what + ": " + union.cardinality() + " distinct messages handled, "
                    + handled + " handler calls, " + processed + " settled as processed; expected " + n + " each");
        }
    }

    /** A store server the consumer processes share, with what the parent does around each measurement. */
    private interface SharedStore extends BenchEnv.StoreServer, AutoCloseable {
        String description();

        /** @return the consumer process's arguments that name the store (and {@code table}, for JDBC) */
        List<String> childArgs(String table);

        void prepare(String table) throws Exception;

        void cleanUp(String table) throws Exception;

        @Override
        void close() throws Exception;
    }

    private final Options options;
    private final Client client = Client.create();
    private final AtomicLong sequence = new AtomicLong();
    private BenchEnv.Broker broker;

    private ScaleOutBenchmark(Options options) {
        this.options = options;
    }

    /**
     * @param args see the class comment
     * @throws Exception if the benchmark cannot run, or a measurement handled a message twice or missed one
     */
    public static void main(String[] args) throws Exception {
        EndToEndBenchmark.quietLogging();
        Options o = Options.parse(args);
        String text = new ScaleOutBenchmark(o).run();
        BenchEnv.printAndWrite(o.out, text);
        System.exit(0);
    }

    private String run() throws Exception {
        String started = ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        String loadBefore = BenchEnv.loadAverage();
        int cores = Runtime.getRuntime().availableProcessors();
        long t0 = System.nanoTime();
        StringBuilder sections = new StringBuilder();
        StringBuilder sizing = new StringBuilder();
        try {
            broker = BenchEnv.Broker.start(true, options.brokerJvm, options.dataDir);
            log("broker pid " + broker.handle().pid() + " port " + broker.port() + ": " + broker.config());
            for (String storeName : options.stores) {
                try (SharedStore store = open(storeName)) {
                    log(store.description());
                    String storeLoad = BenchEnv.loadAverage();
                    Map<Integer, List<Run>> runs = new LinkedHashMap<>();
                    for (int round = 1; round <= options.rounds; round++) {
                        for (int p : options.processes) {
                            Run run = measure(storeName, store, p, options.messages(storeName));
                            runs.computeIfAbsent(p, k -> new ArrayList<>()).add(run);
                            log(String.format(Locale.ROOT, "%s round %d, %d process%s: %,.0f msg/s; CPU µs/msg "
                                    + "consumers %.0f, broker %.0f, store server %.0f", storeName, round, p,
                                    p == 1 ? "" : "es", run.rate(), run.micros(run.consumersCpu()),
                                    run.micros(run.brokerCpu()), run.micros(run.storeCpu())));
                        }
                    }
                    sections.append(table(storeName, store.description(), storeLoad, runs, cores));
                    sizing.append(sizing(storeName, runs));
                }
            }
        } finally {
            client.close();
            if (broker != null) {
                broker.close();
            }
        }
        String minutes = String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 60e9);
        return "## Scale-out: consumer processes on one queue and one store\n\nRun " + started + " on "
                + BenchEnv.machine() + ", " + minutes + " min, command `" + options.command + "`.\n"
                + "Load average (1/5/15 min) at start: " + loadBefore + "; at the end: " + BenchEnv.loadAverage()
                + ".\nBroker: embedded Artemis in its own JVM (" + String.join(" ", options.brokerJvm) + "), "
                + broker.config() + "; durable messages, 100-byte body.\nEach consumer process: its own JVM ("
                + String.join(" ", options.consumerJvm) + "), one AmqpConsumer, " + options.threads
                + " handler threads, prefetch " + (EndToEndBenchmark.CREDIT - options.threads)
                + ", no-op handler, the store's defaults (JDBC: a pool of " + options.pool + " per process); before "
                + "the clock starts it consumed " + options.warmup + " messages of a warm-up queue of its own on the "
                + "same store (not measured). Time: from telling the started processes to go until the last settle "
                + "in any of them. Each round measures " + options.processes + " processes in that order; medians over "
                + options.rounds + " round" + (options.rounds == 1 ? "" : "s") + "; the ratio to 1 process is the "
                + "median of the ratios within a round. Every measurement checked: each message handled exactly once "
                + "across the processes, none left on the queue.\n\n" + sections
                + "### Per core, for sizing\n\n" + sizing + "\n";
    }

    private SharedStore open(String name) throws Exception {
        return switch (name) {
            case "postgres" -> jdbc(BenchEnv.Postgres.open(null, null, null, options.dataDir));
            case "mariadb" -> jdbc(BenchMariaDb.open(null, null, null, options.dataDir));
            case "redis" -> redis(BenchRedis.start(0, options.dataDir));
            case "redis-cluster" -> redis(BenchRedis.start(options.clusterMasters, options.dataDir));
            default -> throw new IllegalArgumentException("unknown store " + name);
        };
    }

    private SharedStore jdbc(BenchEnv.Postgres pg) {
        return jdbc(pg, pg.description(), pg.url(), pg.user(), pg.password(), "postgres", pg::pool, pg::execute,
                pg::close);
    }

    private SharedStore jdbc(BenchMariaDb db) {
        return jdbc(db, db.description(), db.url(), db.user(), db.password(), "mariadb", db::pool, db::execute,
                db::close);
    }

    private interface PoolFactory {
        HikariDataSource pool(int size, String name);
    }

    private interface Sql {
        void execute(String sql) throws Exception;
    }

    private SharedStore jdbc(BenchEnv.StoreServer server, String description, String url, String user,
                             String password, String kind, PoolFactory pools, Sql sql, AutoCloseable close) {
        return new SharedStore() {
            @Override
            public String description() {
                return description;
            }

            @Override
            public List<String> childArgs(String table) {
                return List.of("--store", kind, "--jdbc-url", url, "--jdbc-user", user == null ? "" : user,
                        "--jdbc-password", password == null ? "" : password, "--table", table, "--pool",
                        Integer.toString(options.pool));
            }

            @Override
            public void prepare(String table) {
                try (HikariDataSource pool = pools.pool(1, "schema")) {
                    JdbcIdempotencyStore.builder(pool).tableName(table).build().createSchema();
                }
            }

            @Override
            public void cleanUp(String table) throws Exception {
                sql.execute("DROP TABLE IF EXISTS " + table);
                sql.execute("DROP TABLE IF EXISTS " + table + "_outbox"); // the store's outbox, made by createSchema()
            }

            @Override
            public long serverCpuNanos() {
                return server.serverCpuNanos();
            }

            @Override
            public void close() throws Exception {
                close.close();
            }
        };
    }

    private SharedStore redis(BenchRedis r) {
        return new SharedStore() {
            @Override
            public String description() {
                return r.description();
            }

            @Override
            public List<String> childArgs(String table) {
                return List.of("--store", r.masters() == 0 ? "redis" : "redis-cluster", "--redis-port",
                        Integer.toString(r.port()));
            }

            @Override
            public void prepare(String table) {
                r.flushAll();
            }

            @Override
            public void cleanUp(String table) {
                r.flushAll();
            }

            @Override
            public long serverCpuNanos() {
                return r.serverCpuNanos();
            }

            @Override
            public void close() {
                r.close();
            }
        };
    }

    // ------------------------------------------------------------------ one measurement

    /** A consumer process and what it has said. */
    private static final class Child {
        final int index;
        final Process process;
        final Writer stdin;
        final CountDownLatch ready = new CountDownLatch(1);
        final CountDownLatch result = new CountDownLatch(1);
        volatile int progress;
        volatile String resultLine;
        final Thread reader;

        Child(int index, Process process) {
            this.index = index;
            this.process = process;
            this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            this.reader = new Thread(this::read, "scaleout-child-" + index);
            reader.setDaemon(true);
            reader.start();
        }

        private void read() {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.equals("READY")) {
                        ready.countDown();
                    } else if (line.startsWith("PROGRESS ")) {
                        progress = Integer.parseInt(line.substring("PROGRESS ".length()).trim());
                    } else if (line.startsWith("RESULT ")) {
                        resultLine = line;
                        result.countDown();
                    } else {
                        System.out.println("consumer process " + index + ": " + line);
                    }
                }
            } catch (IOException | RuntimeException e) {
                System.out.println("consumer process " + index + ": output unreadable: " + e);
            }
        }

        void send(String word) throws IOException {
            stdin.write(word + "\n");
            stdin.flush();
        }
    }

    private Run measure(String storeName, SharedStore store, int processes, int n) throws Exception {
        long seq = sequence.incrementAndGet();
        String what = storeName + ", " + processes + " process" + (processes == 1 ? "" : "es");
        String queue = "scaleout." + storeName + "." + processes + "." + seq;
        String table = "acemq_scaleout_" + seq;
        EndToEndBenchmark.fill(client, broker.port(), queue, n, true);
        for (int i = 0; i < processes && options.warmup > 0; i++) {
            EndToEndBenchmark.fill(client, broker.port(), queue + ".warmup." + i, options.warmup, true);
        }
        store.prepare(table);
        List<Child> children = new ArrayList<>();
        try {
            for (int i = 0; i < processes; i++) {
                children.add(start(i, queue, table, store));
            }
            for (Child c : children) {
                awaitReady(c, what);
            }
            long[] cpu0 = new long[processes];
            for (int i = 0; i < processes; i++) {
                cpu0[i] = BenchEnv.cpuNanos(children.get(i).process.toHandle());
            }
            long broker0 = BenchEnv.cpuNanos(broker.handle());
            long store0 = store.serverCpuNanos();
            Instant go = Instant.now();
            for (Child c : children) {
                c.send("GO");
            }
            awaitDrained(children, n, what);
            long consumersCpu = 0;
            for (int i = 0; i < processes; i++) {
                long now = BenchEnv.cpuNanos(children.get(i).process.toHandle());
                consumersCpu = consumersCpu < 0 || now < 0 || cpu0[i] < 0 ? -1 : consumersCpu + now - cpu0[i];
            }
            long brokerCpu = BenchEnv.cpuNanos(broker.handle()) - broker0;
            long store1 = store.serverCpuNanos();
            long storeCpu = store0 < 0 || store1 < 0 ? -1 : store1 - store0;
            List<ChildResult> results = new ArrayList<>();
            for (Child c : children) {
                c.send("STOP");
            }
            for (Child c : children) {
                if (!c.result.await(90, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(what + ": consumer process " + c.index + " did not report after "
                            + "STOP (exit code " + (c.process.isAlive() ? "none, still running" : c.process.exitValue())
                            + ")");
                }
                results.add(ChildResult.parse(c.resultLine));
                if (!c.process.waitFor(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(what + ": consumer process " + c.index + " did not exit");
                }
            }
            verify(what, n, results);
            EndToEndBenchmark.checkDrained(client, broker.port(), queue, what);
            long goMicros = go.getEpochSecond() * 1_000_000L + go.getNano() / 1_000;
            long lastMicros = results.stream().mapToLong(ChildResult::lastMicros).max().orElseThrow();
            return new Run(processes, n, (lastMicros - goMicros) * 1_000, consumersCpu, brokerCpu, storeCpu);
        } finally {
            for (Child c : children) {
                if (c.process.isAlive()) {
                    c.process.destroyForcibly();
                    c.process.waitFor(20, TimeUnit.SECONDS);
                }
            }
            store.cleanUp(table);
        }
    }

    private Child start(int index, String queue, String table, SharedStore store) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(BenchEnv.javaCommand());
        cmd.addAll(options.consumerJvm);
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ScaleOutConsumerMain.class.getName());
        cmd.addAll(List.of("--port", Integer.toString(broker.port()), "--queue", queue, "--warmup-queue",
                queue + ".warmup." + index, "--warmup", Integer.toString(options.warmup), "--threads",
                Integer.toString(options.threads), "--prefetch",
                Integer.toString(EndToEndBenchmark.CREDIT - options.threads), "--name", "scaleout-" + index));
        cmd.addAll(store.childArgs(table));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        return new Child(index, p);
    }

    private static void awaitReady(Child c, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
        while (!c.ready.await(100, TimeUnit.MILLISECONDS)) {
            if (!c.process.isAlive()) {
                throw new IllegalStateException(what + ": consumer process " + c.index + " exited with code "
                        + c.process.exitValue() + " before it was ready (its output is above)");
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(what + ": consumer process " + c.index + " not ready after 180 s "
                        + "(warm-up of its own queue)");
            }
        }
    }

    /** Waits until the processes' settled counts add up to {@code n}; fails on a stall or a process that exits. */
    private static void awaitDrained(List<Child> children, int n, String what) throws InterruptedException {
        long last = -1;
        long lastMove = System.nanoTime();
        while (true) {
            long sum = 0;
            for (Child c : children) {
                sum += c.progress;
                if (!c.process.isAlive()) {
                    throw new IllegalStateException(what + ": consumer process " + c.index + " exited with code "
                            + c.process.exitValue() + " during the measurement (its output is above)");
                }
            }
            if (sum >= n) {
                return;
            }
            if (sum != last) {
                last = sum;
                lastMove = System.nanoTime();
            } else if (System.nanoTime() - lastMove > EndToEndBenchmark.STALL.toNanos()) {
                throw new IllegalStateException(what + ": stalled at " + sum + " of " + n + " settled for "
                        + EndToEndBenchmark.STALL.toSeconds() + " s");
            }
            Thread.sleep(5);
        }
    }

    // ------------------------------------------------------------------ report

    private String table(String storeName, String description, String load, Map<Integer, List<Run>> runs,
                         int cores) {
        StringBuilder sb = new StringBuilder("### ").append(storeName).append("\n\n").append(description)
                .append(". ").append(String.format(Locale.ROOT, "%,d", options.messages(storeName)))
                .append(" messages per measurement; load average at the store's start ").append(load).append(".\n\n")
                .append("| consumer processes | msg/s (median) | rounds, k msg/s | ratio to 1 process | msg/s added per "
                        + "added process | CPU µs/msg consumers (sum) / broker / store server | total µs/msg | CPU "
                        + "used, % of ").append(cores).append(" cores |\n|---:|---:|---|---:|---:|---|---:|---:|\n");
        double base = median(runs.get(1).stream().mapToDouble(Run::rate).toArray());
        for (Map.Entry<Integer, List<Run>> e : runs.entrySet()) {
            int p = e.getKey();
            List<Run> list = e.getValue();
            double rate = median(list.stream().mapToDouble(Run::rate).toArray());
            double[] ratios = new double[list.size()];
            for (int i = 0; i < list.size(); i++) {
                ratios[i] = list.get(i).rate() / runs.get(1).get(i).rate();
            }
            StringBuilder rounds = new StringBuilder();
            list.forEach(r -> rounds.append(rounds.length() == 0 ? "" : " ")
                    .append(String.format(Locale.ROOT, "%.1f", r.rate() / 1e3)));
            sb.append("| ").append(p).append(" | ").append(String.format(Locale.ROOT, "%,.0f", rate)).append(" | ")
                    .append(rounds).append(" | ").append(String.format(Locale.ROOT, "%.2f", median(ratios)))
                    .append(" | ").append(p == 1 ? "—" : String.format(Locale.ROOT, "%,.0f", (rate - base) / (p - 1)))
                    .append(" | ").append(num(list, r -> r.micros(r.consumersCpu()))).append(" / ")
                    .append(num(list, r -> r.micros(r.brokerCpu()))).append(" / ")
                    .append(num(list, r -> r.micros(r.storeCpu()))).append(" | ").append(num(list, Run::totalMicros))
                    .append(" | ").append(String.format(Locale.ROOT, "%.0f %%",
                            100 * median(list.stream().mapToDouble(r -> r.machineShare(cores)).toArray())))
                    .append(" |\n");
        }
        return sb.append('\n').toString();
    }

    /**
     * One line per store: messages per second one core carries, for the consumers, the store server and the whole
     * chain, at 1 process and at the most processes measured (each process adds its own JVM's overhead).
     */
    private String sizing(String storeName, Map<Integer, List<Run>> runs) {
        int most = runs.keySet().stream().mapToInt(Integer::intValue).max().orElse(1);
        StringBuilder sb = new StringBuilder("* ").append(storeName).append(':');
        for (int p : most == 1 ? List.of(1) : List.of(1, most)) {
            List<Run> list = runs.get(p);
            double consumer = median(list.stream().mapToDouble(r -> r.micros(r.consumersCpu())).toArray());
            double server = median(list.stream().mapToDouble(r -> r.micros(r.storeCpu())).toArray());
            double total = median(list.stream().mapToDouble(Run::totalMicros).toArray());
            sb.append(String.format(Locale.ROOT, "%s at %d process%s, consumers %.0f µs/msg → about %,.0f msg/s per "
                    + "consumer core, store server %.0f µs/msg → about %,.0f msg/s per server core, consumers + broker "
                    + "+ server %.0f µs/msg → about %,.0f msg/s per core of the whole chain", p == 1 ? "" : ";", p,
                    p == 1 ? "" : "es", consumer, 1e6 / consumer, server, 1e6 / server, total, 1e6 / total));
        }
        return sb.append(".\n").toString();
    }

    private static String num(List<Run> list, java.util.function.ToDoubleFunction<Run> f) {
        double v = median(list.stream().mapToDouble(f).toArray());
        return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, "%.0f", v);
    }

    static double median(double[] values) {
        double[] v = Arrays.stream(values).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static void log(String line) {
        System.out.println("# " + line);
        System.out.flush();
    }
}

package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * End-to-end consume benchmark: a broker in its own JVM, a pre-filled queue per measurement, and in one run the raw
 * protonj2 manual-accept baseline against the runtime with the in-memory store and with the PostgreSQL store; then
 * added latency at half load, and a 10 ms IO-bound handler at concurrency 1, 8 and 64. See docs/benchmarks.md.
 *
 * <pre>
 * java -jar benchmarks/target/acemq-benchmarks.jar e2e [--messages 200000] [--rounds 3] [--warmup 30000]
 *      [--pg-messages 60000] [--pg-concurrency 256] [--pg-in-flight 4] [--pg-batch 128] [--jdbc-url URL --jdbc-user U --jdbc-password P | --no-postgres]
 *      [--io-per-worker 200] [--latency-seconds 8] [--only throughput,latency,io] [--out FILE]
 * </pre>
 */
public final class EndToEndBenchmark {

    static final int BODY = 100;
    private static final String HOST = "127.0.0.1";

    /** Options, all with defaults. */
    static final class Options {
        int messages = 200_000;
        int warmup = 30_000;
        int rounds = 3;
        int pgMessages = 60_000;
        int pgConcurrency = 256;
        int pgInFlight = 4;
        int pgBatch = JdbcIdempotencyStore.DEFAULT_GROUP_COMMIT_MAX_BATCH;
        int ioPerWorker = 200;
        int latencySeconds = 8;
        int storePreload = 500_000;
        boolean postgres = true;
        boolean brokerPersistent = false;
        String jdbcUrl;
        String jdbcUser;
        String jdbcPassword;
        String only = "throughput,latency,io";
        List<String> modes = List.of("raw", "raw-pool4", "memory-1", "memory-4", "memory-8");
        Path out;
        List<String> brokerJvm = List.of("-Xms1g", "-Xmx2g", "-XX:+UseG1GC");

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--no-postgres" -> o.postgres = false;
                    case "--broker-persistent" -> o.brokerPersistent = true;
                    default -> {
                        if (i + 1 >= args.length) {
                            throw new IllegalArgumentException("missing value for " + a);
                        }
                        String v = args[++i];
                        switch (a) {
                            case "--messages" -> o.messages = Integer.parseInt(v);
                            case "--warmup" -> o.warmup = Integer.parseInt(v);
                            case "--rounds" -> o.rounds = Integer.parseInt(v);
                            case "--pg-messages" -> o.pgMessages = Integer.parseInt(v);
                            case "--pg-concurrency" -> o.pgConcurrency = Integer.parseInt(v);
                            case "--pg-in-flight" -> o.pgInFlight = Integer.parseInt(v);
                            case "--pg-batch" -> o.pgBatch = Integer.parseInt(v);
                            case "--io-per-worker" -> o.ioPerWorker = Integer.parseInt(v);
                            case "--latency-seconds" -> o.latencySeconds = Integer.parseInt(v);
                            case "--store-preload" -> o.storePreload = Integer.parseInt(v);
                            case "--jdbc-url" -> o.jdbcUrl = v;
                            case "--jdbc-user" -> o.jdbcUser = v;
                            case "--jdbc-password" -> o.jdbcPassword = v;
                            case "--only" -> o.only = v;
                            case "--modes" -> o.modes = List.of(v.split(","));
                            case "--out" -> o.out = Path.of(v);
                            case "--broker-jvm" -> o.brokerJvm = List.of(v.trim().split("\\s+"));
                            default -> throw new IllegalArgumentException("unknown option " + a);
                        }
                    }
                }
            }
            return o;
        }
    }

    /** One timed consumption. */
    record Sample(String mode, int concurrency, int messages, long nanos, long clientCpu, long brokerCpu) {
        double rate() {
            return messages * 1e9 / nanos;
        }

        double cpuMicrosPerMsg() {
            return clientCpu < 0 || brokerCpu < 0 ? Double.NaN : (clientCpu + brokerCpu) / 1e3 / messages;
        }
    }

    private final Options options;
    private final Client client = Client.create();
    private final AtomicLong sequence = new AtomicLong();
    private BenchEnv.Broker broker;
    private BenchEnv.Postgres postgres;
    private final StringBuilder report = new StringBuilder();
    private final Map<String, List<Sample>> samples = new LinkedHashMap<>();

    EndToEndBenchmark(Options options) {
        this.options = options;
    }

    /**
     * @param args see the class comment
     * @throws Exception if the benchmark cannot run
     */
    public static void main(String[] args) throws Exception {
        quietLogging();
        Options o = Options.parse(args);
        EndToEndBenchmark b = new EndToEndBenchmark(o);
        String text = b.run();
        System.out.println();
        System.out.println(text);
        Path out = o.out != null ? o.out : Path.of("benchmarks", "target", "e2e-results.md");
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        Files.writeString(out, text);
        System.out.println("(written to " + out.toAbsolutePath() + ")");
        System.exit(0);
    }

    String run() throws Exception {
        String started = ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        String loadBefore = BenchEnv.loadAverage();
        broker = BenchEnv.Broker.start(options.brokerPersistent, options.brokerJvm);
        log("broker pid " + broker.handle().pid() + " port " + broker.port() + ", persistent="
                + options.brokerPersistent);
        try {
            if (options.postgres && options.only.contains("throughput")) {
                postgres = BenchEnv.Postgres.open(options.jdbcUrl, options.jdbcUser, options.jdbcPassword);
                log(postgres.description());
            }
            if (options.only.contains("throughput")) {
                throughput();
            }
            String latency = options.only.contains("latency") ? latency() : "";
            String io = options.only.contains("io") ? ioBound() : "";
            report.insert(0, header(started, loadBefore));
            report.append(latency).append(io);
            report.append("\nLoad average (1/5/15 min) before: ").append(loadBefore).append("; after: ")
                    .append(BenchEnv.loadAverage()).append('\n');
            return report.toString();
        } finally {
            client.close();
            broker.close();
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    private String header(String started, String load) {
        return "## End-to-end results\n\n" + "Run " + started + " on " + BenchEnv.machine() + ".\n"
                + "Broker: embedded Artemis in its own JVM (" + String.join(" ", options.brokerJvm) + "), persistence "
                + (options.brokerPersistent ? "on" : "off") + "; messages non-durable, " + BODY
                + "-byte Data body, string message-id. Client JVM: " + String.join(" ",
                        java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) + ".\n"
                + "Load average (1/5/15 min) at start: " + load + ".\n"
                + (postgres != null ? "PostgreSQL store: " + postgres.description() + ".\n" : "") + "\n";
    }

    // ------------------------------------------------------------------ throughput

    private void throughput() throws Exception {
        log("warm-up (" + options.warmup + " messages per mode)");
        for (String mode : options.modes) {
            if (!mode.equals("memory-8")) {
                measure(mode, options.warmup);
            }
        }
        if (postgres != null) {
            // the store's JDBC and group-commit paths get their JIT warm-up too, like every other row
            measure("postgres-" + options.pgConcurrency, Math.min(options.warmup, options.pgMessages));
        }
        for (int round = 1; round <= options.rounds; round++) {
            for (String mode : options.modes) {
                Sample s = measure(mode, options.messages);
                samples.computeIfAbsent(mode, k -> new ArrayList<>()).add(s);
                log(String.format(Locale.ROOT, "round %d %-10s %,9.0f msg/s  %5.1f us/msg (client+broker CPU)", round,
                        mode, s.rate(), s.cpuMicrosPerMsg()));
            }
            if (postgres != null) {
                Sample s = measure("postgres-" + options.pgConcurrency, options.pgMessages);
                samples.computeIfAbsent("postgres-" + options.pgConcurrency, k -> new ArrayList<>()).add(s);
                log(String.format(Locale.ROOT, "round %d %-10s %,9.0f msg/s  %5.1f us/msg (client+broker CPU)", round,
                        "postgres-" + options.pgConcurrency, s.rate(), s.cpuMicrosPerMsg()));
            }
        }
        double raw = samples.containsKey("raw") ? median(samples.get("raw"), Sample::rate) : Double.NaN;
        double pool = samples.containsKey("raw-pool4") ? median(samples.get("raw-pool4"), Sample::rate) : Double.NaN;
        report.append("### Throughput (").append(String.format(Locale.ROOT, "%,d", options.messages))
                .append(" messages per measurement; median of ").append(options.rounds)
                .append(" interleaved rounds, all rounds in brackets)\n\n");
        report.append("| mode | handler threads | msg/s (median) | rounds, k msg/s | ratio to raw | ratio to raw-pool4 "
                + "| CPU µs/msg client+broker | target |\n|---|---:|---:|---|---:|---:|---:|---|\n");
        for (Map.Entry<String, List<Sample>> e : samples.entrySet()) {
            List<Sample> list = e.getValue();
            double rate = median(list, Sample::rate);
            String target = "";
            String mode = e.getKey();
            int threads = list.get(0).concurrency();
            if (mode.startsWith("memory")) {
                double need = threads >= 4 ? 0.95 : 0.90;
                target = String.format(Locale.ROOT, "≥ %.2f× raw: %s", need, rate / raw >= need ? "**met**"
                        : "not met");
            } else if (mode.startsWith("postgres")) {
                target = "≥ 25,000 msg/s: " + (rate >= 25_000 ? "**met**" : "not met");
            }
            report.append(String.format(Locale.ROOT, "| %s | %d | %,.0f | %s | %.2f | %.2f | %.1f | %s |%n",
                    describe(mode), threads, rate, roundList(list), rate / raw, rate / pool,
                    median(list, Sample::cpuMicrosPerMsg), target));
        }
        report.append("\n`raw` = protonj2 receiver (creditWindow 1000, autoAccept false), receive + decode + accept "
                + "on the receiving thread; `raw-pool4` = the receiving thread hands each delivery to a 4-thread pool "
                + "that decodes and accepts (≤ 1000 in flight). `memory-N`/`postgres-N` = AmqpConsumer with N handler "
                + "threads, prefetch 1000 − N (so at most 1000 in flight, like the raw credit window), a no-op "
                + "handler, at-least-once. In-memory store: a fresh unbounded store per measurement, pre-loaded with "
                + String.format(Locale.ROOT, "%,d", options.storePreload) + " confirmed ids (steady-state table size, no eviction). "
                + "PostgreSQL store: ").append(postgres == null ? "not measured (--no-postgres)"
                        : String.format(Locale.ROOT, "JdbcIdempotencyStore, HikariCP pool %d, group commit (maxBatch %d, maxInFlight %d), fresh table, %,d "
                                + "messages", options.pgInFlight + 2, options.pgBatch, options.pgInFlight, options.pgMessages))
                .append(". Time runs from connecting until the link is closed (the detach reply proves the broker "
                        + "processed every disposition). CPU excludes PostgreSQL's own processes.\n\n");
    }

    private static String describe(String mode) {
        return "`" + mode + "`";
    }

    private static String roundList(List<Sample> list) {
        StringBuilder sb = new StringBuilder();
        for (Sample s : list) {
            if (sb.length() > 0) {
                sb.append(' ');
            }
            sb.append(Math.round(s.rate() / 1000));
        }
        return sb.toString();
    }

    private Sample measure(String mode, int n) throws Exception {
        String queue = "bench." + mode + "." + sequence.incrementAndGet();
        fill(queue, n);
        System.gc();
        Thread.sleep(300);
        return switch (mode) {
            case "raw" -> raw(queue, n, 0);
            case "raw-pool4" -> raw(queue, n, 4);
            default -> {
                int dash = mode.lastIndexOf('-');
                int threads = Integer.parseInt(mode.substring(dash + 1));
                if (mode.startsWith("memory")) {
                    yield runtime(mode, queue, n, threads, 1000 - threads, memoryStore(), e -> { });
                }
                try (HikariDataSource pool = postgres.pool(options.pgInFlight + 2, "store")) {
                    // Group commit is off by default (it loses below ~16 concurrent callers); the throughput row
                    // measures the configuration meant for many handler threads.
                    JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool)
                            .tableName("acemq_bench_" + sequence.incrementAndGet())
                            .groupCommit(options.pgBatch, options.pgInFlight)
                            .build();
                    store.createSchema();
                    try {
                        yield runtime(mode, queue, n, threads, 1000 - threads, store, e -> { });
                    } finally {
                        try (java.sql.Connection c = pool.getConnection();
                             java.sql.Statement st = c.createStatement()) {
                            st.execute("DROP TABLE IF EXISTS " + store.tableName());
                        }
                    }
                }
            }
        };
    }

    /**
     * A fresh unbounded in-memory store already holding {@code storePreload} confirmed ids, so its hash table is at the
     * size a long-running consumer's would be (no table growth inside the measurement) and no eviction ever runs.
     */
    private InMemoryIdempotencyStore memoryStore() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder()
                .maxEntries(InMemoryIdempotencyStore.UNBOUNDED).build();
        for (int i = 0; i < options.storePreload; i++) {
            String id = "preload-" + i;
            store.tryClaim(id);
            store.confirm(id);
        }
        return store;
    }

    /** Sends n non-durable messages with 100-byte bodies, pipelined, and waits until the broker accepted them. */
    void fill(String queue, int n) throws Exception {
        try (Connection c = client.connect(HOST, broker.port()); Sender sender = c.openSender(queue)) {
            ArrayDeque<Tracker> window = new ArrayDeque<>();
            for (int i = 0; i < n; i++) {
                byte[] body = new byte[BODY];
                Message<byte[]> m = Message.create(body).messageId(queue + ":" + i).durable(false);
                window.add(sender.send(m));
                if (window.size() > 5_000) {
                    window.poll().awaitSettlement(60, TimeUnit.SECONDS);
                }
            }
            for (Tracker t : window) {
                t.awaitSettlement(60, TimeUnit.SECONDS);
            }
        }
    }

    private Sample raw(String queue, int n, int poolThreads) throws Exception {
        long cpu0 = BenchEnv.cpuNanos(ProcessHandle.current());
        long bcpu0 = BenchEnv.cpuNanos(broker.handle());
        long t0 = System.nanoTime();
        ExecutorService pool = poolThreads > 0 ? Executors.newFixedThreadPool(poolThreads) : null;
        try (Connection c = client.connect(HOST, broker.port())) {
            Receiver r = c.openReceiver(queue, new ReceiverOptions().creditWindow(1000).autoAccept(false));
            if (pool == null) {
                for (int i = 0; i < n; i++) {
                    Delivery d = r.receive(60, TimeUnit.SECONDS);
                    if (d == null) {
                        throw new IllegalStateException("raw: only " + i + " of " + n + " received");
                    }
                    d.message().body();
                    d.accept();
                }
            } else {
                Semaphore inFlight = new Semaphore(1000);
                CountDownLatch done = new CountDownLatch(n);
                for (int i = 0; i < n; i++) {
                    Delivery d = r.receive(60, TimeUnit.SECONDS);
                    if (d == null) {
                        throw new IllegalStateException("raw: only " + i + " of " + n + " received");
                    }
                    inFlight.acquire();
                    pool.execute(() -> {
                        try {
                            d.message().body();
                            d.accept();
                        } catch (ClientException e) {
                            e.printStackTrace();
                        } finally {
                            inFlight.release();
                            done.countDown();
                        }
                    });
                }
                done.await();
            }
            r.close();
        } finally {
            if (pool != null) {
                pool.shutdown();
            }
        }
        long nanos = System.nanoTime() - t0;
        return new Sample(poolThreads == 0 ? "raw" : "raw-pool" + poolThreads, Math.max(1, poolThreads), n, nanos,
                BenchEnv.cpuNanos(ProcessHandle.current()) - cpu0, BenchEnv.cpuNanos(broker.handle()) - bcpu0);
    }

    /** Counts deliveries the runtime settled as processed; anything else is a benchmark error. */
    static final class Counter implements ConsumerObserver {
        final CountDownLatch done;
        final AtomicInteger other = new AtomicInteger();

        Counter(int n) {
            done = new CountDownLatch(n);
        }

        @Override
        public void settled(String subscription, Outcome outcome, SettleReason reason) {
            if (outcome == Outcome.ACCEPTED && reason == SettleReason.PROCESSED) {
                done.countDown();
            } else {
                other.incrementAndGet();
            }
        }
    }

    private Sample runtime(String mode, String queue, int n, int threads, int prefetch, IdempotencyStore store,
                           MessageHandler handler) throws Exception {
        Counter counter = new Counter(n);
        long cpu0 = BenchEnv.cpuNanos(ProcessHandle.current());
        long bcpu0 = BenchEnv.cpuNanos(broker.handle());
        long t0 = System.nanoTime();
        AmqpConsumer consumer = AmqpConsumer.builder().name("bench").broker(HOST, broker.port()).store(store)
                .observer(counter)
                .subscribe(Subscription.builder(queue, handler).concurrency(threads).prefetch(prefetch).build())
                .start();
        boolean complete;
        try {
            complete = counter.done.await(10, TimeUnit.MINUTES);
        } finally {
            consumer.close(Duration.ofSeconds(30));
        }
        long nanos = System.nanoTime() - t0;
        if (!complete || counter.other.get() > 0) {
            throw new IllegalStateException(mode + ": " + (n - counter.done.getCount()) + " of " + n
                    + " processed, " + counter.other.get() + " settled otherwise");
        }
        return new Sample(mode, threads, n, nanos, BenchEnv.cpuNanos(ProcessHandle.current()) - cpu0,
                BenchEnv.cpuNanos(broker.handle()) - bcpu0);
    }

    // ------------------------------------------------------------------ latency at half load

    private String latency() throws Exception {
        double max;
        List<Sample> mem = samples.get("memory-4");
        if (mem != null) {
            max = median(mem, Sample::rate);
        } else {
            max = measure("memory-4", options.warmup).rate();
        }
        int rate = (int) (max / 2);
        int total = rate * options.latencySeconds;
        log("latency at " + rate + " msg/s for " + options.latencySeconds + " s");
        // warm the paced paths once, then measure raw and runtime twice each, interleaved
        long[][] results = new long[5][];
        String[] modes = {"raw", "raw", "memory-4", "raw", "memory-4"};
        double[] achieved = new double[5];
        for (int i = 0; i < modes.length; i++) {
            int count = i == 0 ? Math.min(total, rate * 2) : total;
            long[] lat = paced(modes[i], rate, count, achieved, i);
            results[i] = lat;
            log(String.format(Locale.ROOT, "latency %-9s p50 %,6.0f us  p99 %,7.0f us (sent at %,.0f msg/s)",
                    modes[i], pct(lat, 50) / 1e3, pct(lat, 99) / 1e3, achieved[i]));
        }
        long[] raw = concat(results[1], results[3]);
        long[] rt = concat(results[2], results[4]);
        double added50 = (pct(rt, 50) - pct(raw, 50)) / 1e3;
        double added99 = (pct(rt, 99) - pct(raw, 99)) / 1e3;
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "### Added latency at half load (%,d msg/s = half the `memory-4` "
                + "median; %d s per measurement, 2 measurements each, first 10%% of each dropped)%n%n", rate,
                options.latencySeconds));
        sb.append("| consumer | publish → handler p50 | p99 | p99.9 | publish rate reached |\n|---|---:|---:|---:|---:|\n");
        sb.append(String.format(Locale.ROOT, "| raw protonj2 (receive + accept) | %.0f µs | %.0f µs | %.0f µs | %,.0f msg/s |%n",
                pct(raw, 50) / 1e3, pct(raw, 99) / 1e3, pct(raw, 99.9) / 1e3, (achieved[1] + achieved[3]) / 2));
        sb.append(String.format(Locale.ROOT, "| runtime + in-memory store, 4 threads | %.0f µs | %.0f µs | %.0f µs | %,.0f msg/s |%n",
                pct(rt, 50) / 1e3, pct(rt, 99) / 1e3, pct(rt, 99.9) / 1e3, (achieved[2] + achieved[4]) / 2));
        sb.append(String.format(Locale.ROOT, "| **added by the runtime** | **%.0f µs** | **%.0f µs** | | |%n%n",
                added50, added99));
        sb.append(String.format(Locale.ROOT, "Target: added p99 ≤ 1 ms: %s.%n%n", added99 <= 1000 ? "**met**"
                : "not met"));
        sb.append("Two publishers (own connections) send at a fixed rate, each body carrying System.nanoTime() at "
                + "send; the consumer (same JVM, so the clocks agree) records now − stamp when the handler (runtime) "
                + "or receive() (raw) sees the message. Added latency = runtime percentile − raw percentile.\n\n");
        return sb.toString();
    }

    private static long[] concat(long[] a, long[] b) {
        long[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        Arrays.sort(r);
        return r;
    }

    private long[] paced(String mode, int rate, int total, double[] achieved, int slot) throws Exception {
        String queue = "latency." + mode + "." + sequence.incrementAndGet();
        long[] latency = new long[total];
        AtomicInteger received = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        AutoCloseable consumerHandle;
        Thread rawThread = null;
        // attach the consumer first (auto-creates the queue), then publish
        if (mode.equals("raw")) {
            Connection c = client.connect(HOST, broker.port());
            Receiver r = c.openReceiver(queue, new ReceiverOptions().creditWindow(1000).autoAccept(false));
            r.openFuture().get(30, TimeUnit.SECONDS);
            rawThread = new Thread(() -> {
                try {
                    for (int i = 0; i < total; i++) {
                        Delivery d = r.receive(60, TimeUnit.SECONDS);
                        if (d == null) {
                            break;
                        }
                        record((byte[]) d.message().body(), latency);
                        d.accept();
                    }
                } catch (ClientException e) {
                    e.printStackTrace();
                } finally {
                    done.countDown();
                }
            }, "raw-latency");
            rawThread.start();
            consumerHandle = () -> {
                r.close();
                c.close();
            };
        } else {
            InMemoryIdempotencyStore store = memoryStore();
            AmqpConsumer consumer = AmqpConsumer.builder().name("latency").broker(HOST, broker.port()).store(store)
                    .subscribe(Subscription.builder(queue, e -> {
                        record(e.body(byte[].class), latency);
                        if (received.incrementAndGet() == total) {
                            done.countDown();
                        }
                    }).concurrency(4).prefetch(996).build())
                    .start();
            consumerHandle = consumer;
            Thread.sleep(500); // attached
        }
        int publishers = 2;
        Thread[] pub = new Thread[publishers];
        long start = System.nanoTime();
        for (int p = 0; p < publishers; p++) {
            int first = p;
            pub[p] = new Thread(() -> publishPaced(queue, first, publishers, total, rate / (double) publishers, start),
                    "publisher-" + p);
            pub[p].start();
        }
        for (Thread t : pub) {
            t.join();
        }
        achieved[slot] = total * 1e9 / (System.nanoTime() - start);
        done.await(2, TimeUnit.MINUTES);
        consumerHandle.close();
        if (rawThread != null) {
            rawThread.join(10_000);
        }
        long[] kept = Arrays.copyOfRange(latency, total / 10, total);
        Arrays.sort(kept);
        return kept;
    }

    private static void record(byte[] body, long[] latency) {
        long now = System.nanoTime();
        ByteBuffer b = ByteBuffer.wrap(body);
        long sent = b.getLong(0);
        int seq = b.getInt(8);
        latency[seq] = now - sent;
    }

    /** Sends messages first, first + step, ... at {@code rate} per second, stamped with System.nanoTime(). */
    private void publishPaced(String queue, int first, int step, int total, double rate, long start) {
        try (Connection c = client.connect(HOST, broker.port()); Sender sender = c.openSender(queue)) {
            double intervalNanos = 1e9 / rate;
            long k = 0;
            ArrayDeque<Tracker> window = new ArrayDeque<>();
            for (int seq = first; seq < total; seq += step, k++) {
                long due = start + (long) (k * intervalNanos);
                long wait;
                while ((wait = due - System.nanoTime()) > 0) {
                    if (wait > 200_000) {
                        Thread.sleep(0, 100_000);
                    } else {
                        Thread.onSpinWait();
                    }
                }
                byte[] body = new byte[BODY];
                ByteBuffer b = ByteBuffer.wrap(body);
                b.putLong(0, System.nanoTime());
                b.putInt(8, seq);
                window.add(sender.send(Message.create(body).messageId(queue + ":" + seq).durable(false)));
                if (window.size() > 2_000) {
                    window.poll().awaitSettlement(60, TimeUnit.SECONDS);
                }
            }
            for (Tracker t : window) {
                t.awaitSettlement(60, TimeUnit.SECONDS);
            }
        } catch (ClientException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------ IO-bound handler

    private String ioBound() throws Exception {
        int[] levels = {1, 8, 64};
        double[] rates = new double[levels.length];
        for (int i = 0; i < levels.length; i++) {
            int c = levels[i];
            int n = c * options.ioPerWorker;
            String queue = "io." + c + "." + sequence.incrementAndGet();
            fill(queue, n);
            long[] finished = new long[n];
            AtomicInteger count = new AtomicInteger();
            MessageHandler sleepy = e -> {
                Thread.sleep(10);
                finished[count.getAndIncrement()] = System.nanoTime();
            };
            runtime("io-" + c, queue, n, c, Math.max(c, 100),
                    InMemoryIdempotencyStore.builder().maxEntries(InMemoryIdempotencyStore.UNBOUNDED).build(), sleepy);
            // steady state: from the 10th percentile of completions to the last (connect and close excluded)
            Arrays.sort(finished);
            int from = n / 10;
            rates[i] = (n - 1 - from) * 1e9 / (finished[n - 1] - finished[from]);
            log(String.format(Locale.ROOT, "io concurrency %2d: %,8.1f msg/s", c, rates[i]));
        }
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "### IO-bound handler (sleeps 10 ms), %d messages per handler thread; steady-state rate from the "
                + "10th percentile of completions to the last%n%n",
                options.ioPerWorker));
        sb.append("| handler threads | prefetch | msg/s | × single-thread | ideal (N × single) | efficiency |\n"
                + "|---:|---:|---:|---:|---:|---:|\n");
        for (int i = 0; i < levels.length; i++) {
            sb.append(String.format(Locale.ROOT, "| %d | %d | %,.1f | %.1f | %.0f | %.2f |%n", levels[i],
                    Math.max(levels[i], 100), rates[i], rates[i] / rates[0], levels[i] * rates[0],
                    rates[i] / (levels[i] * rates[0])));
        }
        double eff = rates[2] / (64 * rates[0]);
        sb.append(String.format(Locale.ROOT, "%nTarget: throughput at 64 ≥ 0.9 × 64 × single: %.2f → %s.%n%n", eff,
                eff >= 0.9 ? "**met**" : "not met"));
        return sb.toString();
    }

    // ------------------------------------------------------------------ helpers

    interface Metric {
        double of(Sample s);
    }

    static double median(List<Sample> list, Metric metric) {
        double[] v = list.stream().mapToDouble(metric::of).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** @return the p-th percentile of a sorted array (nearest rank) */
    static double pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
    }

    /** protonj2 logs every connect at INFO; keep the output to results. */
    public static void quietLogging() {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
    }

    private static void log(String line) {
        System.out.println("# " + line);
        System.out.flush();
    }

    static String date() {
        return ZonedDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE);
    }
}

package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariDataSource;
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
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.apache.camel.support.processor.idempotent.MemoryIdempotentRepository;
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
 * End-to-end consume benchmark. A broker in its own JVM, a pre-filled queue per measurement, and in one run, for a
 * durable phase (persistent journal, durable messages) and a non-durable one: the raw protonj2 manual-accept
 * baselines, AceMQ with the in-memory and the PostgreSQL store, and what a user would run instead (Spring AMQP's
 * protonj2 container, Camel's idempotent consumer with its in-memory and JDBC repositories); in the durable phase
 * also AceMQ with the JDBC store on a durable private MariaDB (beside Camel's JDBC repository on it) and with the
 * Redis store on a private standalone redis-server and Redis Clusters of 1 and 3 masters; then added latency at
 * half load and a 10 ms IO-bound handler (non-durable). The report opens with one summary table and its speed
 * targets. See docs/benchmarks.md.
 *
 * <pre>
 * java -jar tooling/benchmarks/target/acemq-benchmarks.jar e2e [--durability durable,non-durable] [--modes LIST]
 *      [--messages 100000] [--pg-messages 20000] [--rounds 3] [--warmup 20000]
 *      [--pg-pool 8] [--pg-tuned-threads 64] [--pg-tuned-pool 6] [--pg-tuned-group-commit 128,4]
 *      [--camel-uri-options OPTS] [--jdbc-url URL --jdbc-user U --jdbc-password P | --no-postgres]
 *      [--mariadb-url URL --mariadb-user U --mariadb-password P]
 *      [--data-dir tooling/benchmarks/target/bench-data] [--io-per-worker 200] [--latency-seconds 8] [--latency-rounds 3]
 *      [--latency-publishers 4] [--latency-probe-seconds 2] [--latency-rate N] [--latency-pool4 true]
 *      [--only throughput,latency,io] [--fingerprint on,off] [--out FILE]
 * </pre>
 */
public final class EndToEndBenchmark {

    static final int BODY = 100;
    static final String HOST = "127.0.0.1";
    /** Credit (unsettled deliveries in flight) every consumer gets in total, split over its links. */
    static final int CREDIT = 1000;
    /** A measurement fails when no message is handled for this long. */
    static final Duration STALL = Duration.ofSeconds(60);

    /** Options, all with defaults. */
    static final class Options {
        int messages = 100_000;
        int warmup = 20_000;
        int rounds = 3;
        int pgMessages = 20_000;
        int pgPool = 8;
        int pgTunedThreads = 64;
        int pgTunedPool = 6;
        String pgTunedGroupCommit = "128,4";
        String camelUriOptions = "";
        int ioPerWorker = 200;
        int latencySeconds = 8;
        int latencyRounds = 3;
        int latencyPublishers = 4;
        double latencyProbeSeconds = 2;
        int latencyRate = 0;
        boolean latencyPool4 = true;
        int storePreload = 500_000;
        boolean postgres = true;
        String jdbcUrl;
        String jdbcUser;
        String jdbcPassword;
        String mariadbUrl;
        String mariadbUser;
        String mariadbPassword;
        String only = "throughput,latency,io";
        List<String> durability = List.of("durable", "non-durable");
        List<String> modes;
        /** {@code --fingerprint}: on, off or both for every AceMQ row; null to leave the rows as requested. */
        List<String> fingerprint;
        Path out;
        Path dataDir = Path.of("tooling", "benchmarks", "target", "bench-data");
        String command;
        List<String> brokerJvm = List.of("-Xms1g", "-Xmx2g", "-XX:+UseG1GC");

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--no-postgres")) {
                    o.postgres = false;
                    continue;
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value for " + a);
                }
                String v = args[++i];
                switch (a) {
                    case "--messages" -> o.messages = positive(a, v);
                    case "--warmup" -> o.warmup = Integer.parseInt(v);
                    case "--rounds" -> o.rounds = positive(a, v);
                    case "--pg-messages" -> o.pgMessages = positive(a, v);
                    case "--pg-pool" -> o.pgPool = positive(a, v);
                    case "--pg-tuned-threads" -> o.pgTunedThreads = positive(a, v);
                    case "--pg-tuned-pool" -> o.pgTunedPool = positive(a, v);
                    case "--pg-tuned-group-commit" -> o.pgTunedGroupCommit = GroupCommit.parse(v).text();
                    case "--camel-uri-options" -> o.camelUriOptions = v;
                    case "--io-per-worker" -> o.ioPerWorker = positive(a, v);
                    case "--latency-seconds" -> o.latencySeconds = positive(a, v);
                    case "--latency-rounds" -> o.latencyRounds = positive(a, v);
                    case "--latency-publishers" -> o.latencyPublishers = positive(a, v);
                    case "--latency-probe-seconds" -> o.latencyProbeSeconds = Double.parseDouble(v);
                    case "--latency-rate" -> o.latencyRate = Integer.parseInt(v);
                    case "--latency-pool4" -> o.latencyPool4 = Boolean.parseBoolean(v);
                    case "--store-preload" -> o.storePreload = Integer.parseInt(v);
                    case "--jdbc-url" -> o.jdbcUrl = v;
                    case "--jdbc-user" -> o.jdbcUser = v;
                    case "--jdbc-password" -> o.jdbcPassword = v;
                    case "--mariadb-url" -> o.mariadbUrl = v;
                    case "--mariadb-user" -> o.mariadbUser = v;
                    case "--mariadb-password" -> o.mariadbPassword = v;
                    case "--only" -> o.only = v;
                    case "--durability" -> o.durability = durability(v);
                    case "--modes" -> o.modes = List.of(v.split(","));
                    case "--fingerprint" -> o.fingerprint = fingerprint(v);
                    case "--out" -> o.out = Path.of(v);
                    case "--data-dir" -> o.dataDir = Path.of(v);
                    case "--command" -> o.command = v;
                    case "--broker-jvm" -> o.brokerJvm = List.of(v.trim().split("\\s+"));
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            for (String d : o.durability) {
                o.modes(d.equals("durable")); // fail early
            }
            if (o.command == null) {
                o.command = "tooling/benchmarks/run.sh e2e" + (args.length == 0 ? "" : " " + String.join(" ", args));
            }
            return o;
        }

        /** @return the rows of a phase: the requested ones in the fingerprint settings asked for */
        List<String> modes(boolean durable) {
            return Modes.withFingerprint(Modes.resolve(modes, durable, pgTunedThreads, postgres), fingerprint);
        }

        private static List<String> fingerprint(String value) {
            List<String> list = new ArrayList<>();
            for (String f : value.split(",")) {
                String t = f.trim();
                if (!t.equals("on") && !t.equals("off")) {
                    throw new IllegalArgumentException("--fingerprint takes on, off or both, but was " + t);
                }
                if (!list.contains(t)) {
                    list.add(t);
                }
            }
            return List.copyOf(list);
        }

        private static int positive(String option, String value) {
            int n = Integer.parseInt(value);
            if (n < 1) {
                throw new IllegalArgumentException(option + " must be >= 1, but was " + n);
            }
            return n;
        }

        private static List<String> durability(String value) {
            List<String> list = new ArrayList<>();
            for (String d : value.split(",")) {
                String t = d.trim();
                if (!t.equals("durable") && !t.equals("non-durable")) {
                    throw new IllegalArgumentException("--durability takes durable, non-durable or both, but was " + t);
                }
                if (!list.contains(t)) {
                    list.add(t);
                }
            }
            // durable first: the non-durable broker then stays up for the latency and IO stages
            list.sort((x, y) -> x.equals("durable") ? -1 : y.equals("durable") ? 1 : 0);
            return List.copyOf(list);
        }
    }

    /**
     * The tuned PostgreSQL row's group-commit setting: {@code default} (builder left alone), {@code off}, {@code on},
     * or {@code maxBatch,maxInFlight}.
     */
    record GroupCommit(String text, Boolean enabled, int maxBatch, int maxInFlight) {
        static GroupCommit parse(String v) {
            return switch (v) {
                case "default" -> new GroupCommit(v, null, 0, 0);
                case "on" -> new GroupCommit(v, true, 0, 0);
                case "off" -> new GroupCommit(v, false, 0, 0);
                default -> {
                    String[] p = v.split(",");
                    if (p.length != 2) {
                        throw new IllegalArgumentException("--pg-tuned-group-commit takes default, on, off or "
                                + "maxBatch,maxInFlight, but was " + v);
                    }
                    yield new GroupCommit(v, true, Integer.parseInt(p[0].trim()), Integer.parseInt(p[1].trim()));
                }
            };
        }

        JdbcIdempotencyStore.Builder apply(JdbcIdempotencyStore.Builder b) {
            if (enabled == null) {
                return b;
            }
            return maxBatch > 0 ? b.groupCommit(maxBatch, maxInFlight) : b.groupCommit(enabled);
        }

        String describe() {
            return switch (text) {
                case "default" -> "store defaults";
                case "on" -> "`groupCommit(true)`";
                case "off" -> "`groupCommit(false)`";
                default -> "`groupCommit(" + maxBatch + ", " + maxInFlight + ")`";
            };
        }
    }

    /** One durability's throughput results. */
    static final class Phase {
        final boolean durable;
        final List<String> modes;
        final Map<String, List<Sample>> samples = new LinkedHashMap<>();
        String brokerConfig = "";
        String loadBefore = "";
        /**
         * Per sending row, over all its measurements (warm-up included): measurements, messages sent (one per
         * message handled), distinct message-ids that arrived on the row's sent queue, extra copies among them.
         */
        final Map<String, long[]> sent = new LinkedHashMap<>();

        Phase(boolean durable, List<String> modes) {
            this.durable = durable;
            this.modes = modes;
        }

        String name() {
            return durable ? "durable" : "non-durable";
        }

        double rate(String mode) {
            List<Sample> list = samples.get(mode);
            return list == null ? Double.NaN : median(list, Sample::rate);
        }

        double ratio(String mode) {
            return rate(mode) / rate(Modes.baseline(mode));
        }

        double medianOf(String mode, Metric metric) {
            List<Sample> list = samples.get(mode);
            return list == null ? Double.NaN : EndToEndBenchmark.median(list, metric);
        }
    }

    private final Options options;
    private final Client client = Client.create();
    private final AtomicLong sequence = new AtomicLong();
    private BenchEnv.Broker broker;
    private BenchEnv.Postgres postgres;
    private BenchMariaDb mariadb;
    /** Redis servers by masters (0: the standalone server). */
    private final Map<Integer, BenchRedis> redis = new LinkedHashMap<>();
    private final List<Phase> phases = new ArrayList<>();
    private String latencyVerdict;
    private boolean latencyConclusive;

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
        Path out = o.out != null ? o.out : Path.of("tooling", "benchmarks", "target", "e2e-results.md");
        BenchEnv.printAndWrite(out, text);
        System.exit(0);
    }

    String run() throws Exception {
        String started = ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        long t0 = System.nanoTime();
        String loadBefore = BenchEnv.loadAverage();
        StringBuilder sections = new StringBuilder();
        boolean throughput = options.only.contains("throughput");
        boolean needsPostgres = false;
        boolean needsMariaDb = false;
        java.util.Set<Integer> redisMasters = new java.util.TreeSet<>();
        for (String d : options.durability) {
            Phase phase = new Phase(d.equals("durable"), options.modes(d.equals("durable")));
            phases.add(phase);
            needsPostgres |= phase.modes.stream().anyMatch(Modes::usesPostgres);
            needsMariaDb |= phase.modes.stream().anyMatch(m -> Modes.server(m) == Modes.Server.MARIADB);
            phase.modes.stream().filter(m -> Modes.server(m) == Modes.Server.REDIS)
                    .forEach(m -> redisMasters.add(Modes.redisMasters(m)));
        }
        try {
            if (throughput && needsPostgres) {
                postgres = BenchEnv.Postgres.open(options.jdbcUrl, options.jdbcUser, options.jdbcPassword,
                        options.dataDir);
                log(postgres.description());
            }
            if (throughput && needsMariaDb) {
                mariadb = BenchMariaDb.open(options.mariadbUrl, options.mariadbUser, options.mariadbPassword,
                        options.dataDir);
                log(mariadb.description());
            }
            if (throughput) {
                for (int m : redisMasters) {
                    BenchRedis r = BenchRedis.start(m, options.dataDir);
                    redis.put(m, r);
                    log(r.description());
                }
            }
            if (throughput) {
                for (Phase phase : phases) {
                    startBroker(phase.durable);
                    phase.brokerConfig = broker.config();
                    phase.loadBefore = BenchEnv.loadAverage();
                    sections.append(throughput(phase));
                }
            }
            boolean latency = options.only.contains("latency");
            boolean io = options.only.contains("io");
            if (latency || io) {
                if (broker == null || broker.persistent()) {
                    startBroker(false);
                }
                if (latency) {
                    sections.append(latency());
                }
                if (io) {
                    sections.append(ioBound());
                }
            }
            String minutes = String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 60e9);
            return header(started, loadBefore, minutes) + summary() + targets() + sections
                    + "\nLoad average (1/5/15 min) before: " + loadBefore + "; after: " + BenchEnv.loadAverage() + "\n";
        } finally {
            client.close();
            if (broker != null) {
                broker.close();
            }
            if (postgres != null) {
                postgres.close();
            }
            if (mariadb != null) {
                mariadb.close();
            }
            redis.values().forEach(BenchRedis::close);
        }
    }

    private void startBroker(boolean persistent) throws Exception {
        if (broker != null) {
            broker.close();
        }
        broker = BenchEnv.Broker.start(persistent, options.brokerJvm, options.dataDir);
        log("broker pid " + broker.handle().pid() + " port " + broker.port() + ": " + broker.config());
    }

    private String header(String started, String load, String minutes) {
        return "## End-to-end results\n\n" + "Run " + started + " on " + BenchEnv.machine() + ", "
                + minutes + " min, command `" + options.command + "`.\n"
                + "Broker: embedded Artemis 2.55 in its own JVM (" + String.join(" ", options.brokerJvm)
                + "); 100-byte Data body, string message-id. Client JVM: " + String.join(" ",
                        java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) + ".\n"
                + "Load average (1/5/15 min) at start: " + load + ".\n"
                + (postgres != null ? "PostgreSQL: " + postgres.description() + ".\n" : "")
                + (mariadb != null ? "MariaDB: " + mariadb.description() + ".\n" : "")
                + redis.values().stream().map(r -> r.description() + ".\n").reduce("", String::concat)
                + "\n";
    }

    // ------------------------------------------------------------------ summary and targets

    private Phase phase(boolean durable) {
        return phases.stream().filter(p -> p.durable == durable && !p.samples.isEmpty()).findFirst().orElse(null);
    }

    private String describe(String mode) {
        if (Modes.fingerprintOff(mode)) {
            return describe(Modes.fingerprintOnTwin(mode)) + ", `Fingerprint.off()`";
        }
        int t = Modes.threads(mode);
        if (mode.equals("raw") || mode.startsWith("raw-pool")) {
            return "raw protonj2, manual accept" + (t == 1 ? "" : ", " + t + "-thread pool");
        }
        if (mode.startsWith("memory-")) {
            return "**AceMQ + in-memory store**";
        }
        if (mode.startsWith("spring-")) {
            return "Spring AMQP 4.1.2 protonj2 container, autoAccept off (no de-duplication)";
        }
        if (mode.startsWith("camel-memory-")) {
            return "Camel 4.22 idempotent consumer, in-memory repository";
        }
        if (mode.startsWith("camel-jdbc-")) {
            return "Camel 4.22 idempotent consumer, JDBC repository (pool " + options.pgPool + ")";
        }
        if (mode.startsWith("postgres-default-")) {
            return "**AceMQ + JdbcIdempotencyStore, its defaults** (pool " + options.pgPool + ")";
        }
        if (Modes.sends(mode) > 0 || Modes.transactional(mode)) {
            String handler = Modes.transactional(mode) ? "`JdbcTransactionalHandler` writing one row" : "a handler";
            String send = Modes.sends(mode) == 0 ? ""
                    : Modes.transactional(mode) ? " and sending one message (outbox, then dispatch)"
                    : " sending one message (direct, before the confirm)";
            return "**AceMQ + JdbcIdempotencyStore, its defaults, " + handler + send + "** (pool " + options.pgPool
                    + ")";
        }
        if (mode.startsWith("postgres-batch")) {
            return "**AceMQ + JdbcIdempotencyStore, its defaults, batch handler of up to " + Modes.batchSize(mode)
                    + " messages** (pool " + options.pgPool + ")";
        }
        if (mode.startsWith("camel-mariadb-")) {
            return "Camel 4.22 idempotent consumer, JDBC repository on MariaDB (pool " + options.pgPool + ")";
        }
        if (mode.startsWith("mariadb-default-")) {
            return "**AceMQ + JdbcIdempotencyStore on MariaDB, its defaults** (pool " + options.pgPool + ")";
        }
        if (mode.startsWith("redis-default-")) {
            return "**AceMQ + RedisIdempotencyStore, standalone redis-server, its defaults**";
        }
        if (mode.startsWith("redis-cluster")) {
            int m = Modes.redisMasters(mode);
            return "**AceMQ + RedisIdempotencyStore, Redis Cluster of " + m + " master" + (m == 1 ? "" : "s")
                    + ", its defaults**";
        }
        return "AceMQ + JdbcIdempotencyStore, " + GroupCommit.parse(options.pgTunedGroupCommit).describe()
                + " (pool " + options.pgTunedPool + ")";
    }

    /** The table docs/benchmarks.md opens with: every row of both phases side by side. */
    private String summary() {
        Phase durable = phase(true);
        Phase plain = phase(false);
        if (durable == null && plain == null) {
            return "";
        }
        List<String> rows = new ArrayList<>();
        for (Phase p : phases) {
            for (String m : p.modes) {
                if (!rows.contains(m)) {
                    rows.add(m);
                }
            }
        }
        StringBuilder sb = new StringBuilder("### Summary\n\n"
                + "Medians of " + options.rounds + " interleaved rounds; " + fmt(options.messages) + " messages per "
                + "measurement, " + fmt(options.pgMessages) + " for the rows with a database or Redis; credit " + fmt(CREDIT) + "; no-op "
                + "handler. Ratios are to raw protonj2 measured in the same phase of this run with the same thread "
                + "shape (1 thread: `raw`; more: `raw-pool4`). Cost columns: from the durable phase (the non-durable one "
                + "for a row measured only there); CPU in µs per message.\n\n"
                + "| consumer | handler threads | durable msg/s | ratio to raw | non-durable msg/s | ratio to raw "
                + "| commits/msg (Redis: script calls/msg) | CPU µs/msg client / broker / store server |\n"
                + "|---|---:|---:|---:|---:|---:|---:|---|\n");
        for (String m : rows) {
            Phase cost = durable != null && durable.samples.containsKey(m) ? durable : plain;
            sb.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s | %s | %s |%n", describe(m),
                    Modes.threads(m), rateCell(durable, m), ratioCell(durable, m), rateCell(plain, m),
                    ratioCell(plain, m), Modes.server(m) != null ? num(cost.medianOf(m, Sample::commitsPerMsg), 3) : "—",
                    cost.samples.containsKey(m) ? cpuCell(cost, m) : "—"));
        }
        sb.append('\n');
        return sb.toString();
    }

    private static String cpuCell(Phase p, String m) {
        String c = num(p.medianOf(m, Sample::clientMicrosPerMsg), 1) + " / " + num(p.medianOf(m, Sample::brokerMicrosPerMsg), 1);
        return Modes.server(m) != null ? c + " / " + num(p.medianOf(m, Sample::pgMicrosPerMsg), 1) : c;
    }

    private static String rateCell(Phase p, String m) {
        return p == null || !p.samples.containsKey(m) ? "—" : fmt(p.rate(m));
    }

    private static String ratioCell(Phase p, String m) {
        return p == null || !p.samples.containsKey(m) ? "—" : num(p.ratio(m), 2);
    }

    /** The end-to-end speed targets, each met or not, from this run. */
    private String targets() {
        StringBuilder sb = new StringBuilder("### Targets\n\nCommand: `" + options.command + "`.\n\n"
                + "| target | result | status |\n|---|---|---|\n");
        for (boolean d : new boolean[] {true, false}) {
            Phase p = phase(d);
            String name = d ? "durable" : "non-durable";
            for (String m : List.of("memory-1", "memory-4")) {
                String what = "in-memory store ≥ 0.95 × raw protonj2, " + Modes.threads(m) + " handler thread"
                        + (Modes.threads(m) == 1 ? "" : "s") + ", " + name;
                if (p == null || !p.samples.containsKey(m)) {
                    sb.append("| ").append(what).append(" | — | not measured in this run |\n");
                } else {
                    double r = p.ratio(m);
                    sb.append(String.format(Locale.ROOT, "| %s | `%s` %s msg/s against `%s` %s: %.2f | %s |%n", what,
                            m, fmt(p.rate(m)), Modes.baseline(m), fmt(p.rate(Modes.baseline(m))), r,
                            r >= 0.95 ? "**met**" : "not met"));
                }
            }
        }
        Phase p = phase(true);
        String what = "durable PostgreSQL, store defaults, 4 handler threads ≥ 5 × Camel's JDBC idempotent consumer";
        if (p == null || !p.samples.containsKey("postgres-default-4") || !p.samples.containsKey("camel-jdbc-4")) {
            sb.append("| ").append(what).append(" | — | not measured in this run |\n");
        } else {
            double r = p.rate("postgres-default-4") / p.rate("camel-jdbc-4");
            sb.append(String.format(Locale.ROOT, "| %s | %s against %s msg/s: %.2f × (commits/msg %s against %s) | %s |%n",
                    what, fmt(p.rate("postgres-default-4")), fmt(p.rate("camel-jdbc-4")), r,
                    num(p.medianOf("postgres-default-4", Sample::commitsPerMsg), 3),
                    num(p.medianOf("camel-jdbc-4", Sample::commitsPerMsg), 3), r >= 5 ? "**met**" : "not met"));
        }
        what = "durable PostgreSQL, store defaults, 4 handler threads: batches of 100 against single messages "
                + "(no target; measured side by side)";
        if (p == null || !p.samples.containsKey("postgres-batch100-4") || !p.samples.containsKey("postgres-default-4")) {
            sb.append("| ").append(what).append(" | — | not measured in this run |\n");
        } else {
            double r = p.rate("postgres-batch100-4") / p.rate("postgres-default-4");
            sb.append(String.format(Locale.ROOT, "| %s | %s against %s msg/s: %.2f × (commits/msg %s against %s) | "
                    + "measured |%n", what, fmt(p.rate("postgres-batch100-4")), fmt(p.rate("postgres-default-4")), r,
                    num(p.medianOf("postgres-batch100-4", Sample::commitsPerMsg), 3),
                    num(p.medianOf("postgres-default-4", Sample::commitsPerMsg), 3)));
        }
        sb.append(sendTargets(p));
        String tuned = "postgres-tuned-" + options.pgTunedThreads;
        what = "durable PostgreSQL, best documented setting, ≤ 64 handler threads: ≥ 25,000 msg/s and ≤ 0.05 commits/msg";
        if (p == null || !p.samples.containsKey(tuned)) {
            sb.append("| ").append(what).append(" | — | not measured in this run |\n");
        } else {
            double rate = p.rate(tuned);
            double commits = p.medianOf(tuned, Sample::commitsPerMsg);
            boolean met = rate >= 25_000 && commits <= 0.05 && options.pgTunedThreads <= 64;
            sb.append(String.format(Locale.ROOT, "| %s | `%s` (%s): %s msg/s, %s commits/msg | %s |%n", what, tuned,
                    describe(tuned).replace("AceMQ + JdbcIdempotencyStore, ", ""), fmt(rate), num(commits, 3),
                    met ? "**met**" : options.pgTunedThreads > 64 ? "not met (more than 64 handler threads)"
                            : "not met"));
        }
        what = "added latency at half load ≤ 1 ms at p99, measured conclusively (non-durable)";
        if (latencyVerdict == null) {
            sb.append("| ").append(what).append(" | — | not measured in this run |\n");
        } else {
            boolean met = latencyVerdict.startsWith("met");
            String status;
            if (latencyVerdict.startsWith("not measurable")) {
                status = "not measurable";
            } else if (latencyConclusive) {
                status = met ? "**met**" : "not met";
            } else {
                status = (met ? "met by the rule" : "not met") + ", **inconclusive**: raw's own p99 moved more than "
                        + "1 ms between rounds";
            }
            sb.append("| ").append(what).append(" | ").append(latencyVerdict).append(" | ").append(status)
                    .append(" |\n");
        }
        sb.append('\n');
        return sb.toString();
    }

    /** The sending target, one line per sending row measured beside its consume-only twin in the durable phase. */
    private String sendTargets(Phase p) {
        StringBuilder sb = new StringBuilder();
        if (p == null) {
            return "";
        }
        for (String send : p.samples.keySet()) {
            if (Modes.sends(send) == 0 || !p.samples.containsKey(Modes.consumeOnlyTwin(send))) {
                continue;
            }
            String only = Modes.consumeOnlyTwin(send);
            double r = p.rate(send) / p.rate(only);
            double cSend = p.medianOf(send, Sample::commitsPerMsg);
            double cOnly = p.medianOf(only, Sample::commitsPerMsg);
            sb.append(String.format(Locale.ROOT, "| durable PostgreSQL, store defaults, %d handler threads: consume + "
                    + "one send per message ≥ 0.5 × consume only, commits/msg not above (`%s` against `%s`) | %s "
                    + "against %s msg/s: %.2f × (commits/msg %s against %s) | %s |%n", Modes.threads(send), send, only,
                    fmt(p.rate(send)), fmt(p.rate(only)), r, num(cSend, 3), num(cOnly, 3),
                    r >= 0.5 && cSend <= cOnly ? "**met**" : "not met"));
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ throughput

    private String throughput(Phase phase) throws Exception {
        log(phase.name() + ": warm-up (" + options.warmup + " messages per mode): " + phase.modes);
        for (String mode : phase.modes) {
            measure(phase, mode, Math.min(options.warmup, count(mode)));
        }
        for (int round = 1; round <= options.rounds; round++) {
            for (String mode : Modes.roundOrder(phase.modes, round)) {
                Sample s = measure(phase, mode, count(mode));
                phase.samples.computeIfAbsent(mode, k -> new ArrayList<>()).add(s);
                log(String.format(Locale.ROOT, "%s round %d %-20s %,9.0f msg/s  %5.1f us/msg client+broker%s%s",
                        phase.name(), round, mode, s.rate(), s.cpuMicrosPerMsg(), s.pgCommits() < 0 ? ""
                                : String.format(Locale.ROOT, "  %.3f %s/msg  %.1f us/msg %s", s.commitsPerMsg(),
                                        Modes.server(mode) == Modes.Server.REDIS ? "script calls" : "commits",
                                        s.pgMicrosPerMsg(), Modes.server(mode).label),
                        s.logSyncs() < 0 ? "" : String.format(Locale.ROOT, "  %.3f %s/msg", s.logSyncsPerMsg(),
                                Modes.server(mode) == Modes.Server.REDIS ? "commands" : "redo log writes")));
            }
        }
        StringBuilder sb = new StringBuilder();
        sb.append("### Throughput, ").append(phase.name()).append(phase.durable
                ? " (persistent journal, durable messages)" : " (no journal, non-durable messages)")
                .append(": medians of ").append(options.rounds).append(" interleaved rounds, all rounds in brackets\n\n")
                .append("Broker: ").append(phase.brokerConfig).append(". Load average at start: ")
                .append(phase.loadBefore).append(".\n\n");
        sb.append("| mode | consumer | handler threads | messages | msg/s (median) | rounds, k msg/s | ratio to raw (same "
                + "threads) | ratio to `raw` | CPU µs/msg client+broker |\n|---|---|---:|---:|---:|---|---:|---:|---:|\n");
        for (Map.Entry<String, List<Sample>> e : phase.samples.entrySet()) {
            String mode = e.getKey();
            List<Sample> list = e.getValue();
            sb.append(String.format(Locale.ROOT, "| `%s` | %s | %d | %s | %s | %s | %s | %s | %s |%n", mode,
                    describe(mode), Modes.threads(mode), fmt(count(mode)), fmt(phase.rate(mode)), roundList(list),
                    num(phase.ratio(mode), 2), num(phase.rate(mode) / phase.rate("raw"), 2),
                    num(median(list, Sample::cpuMicrosPerMsg), 1)));
        }
        sb.append("\nEach row's consumer is described in docs/benchmarks.md (\"What each row runs\"). Time and CPU run "
                + "from connecting (starting the consumer, container or route) until the last message has been "
                + "settled; closing is not timed for any row. CPU excludes the store servers' processes (PostgreSQL, "
                + "MariaDB, redis-server); they are in the store tables below.\n\n");
        sb.append(fingerprintComparison(phase));
        sb.append("#### Where the CPU goes (medians, from /proc: user and system time, context switches summed over "
                + "the threads)\n\n| mode | client user µs/msg | client system µs/msg | broker µs/msg "
                + "| client context switches/msg | broker context switches/msg |\n|---|---:|---:|---:|---:|---:|\n");
        for (Map.Entry<String, List<Sample>> e : phase.samples.entrySet()) {
            List<Sample> list = e.getValue();
            sb.append(String.format(Locale.ROOT, "| `%s` | %.1f | %.1f | %.1f | %.2f | %.2f |%n", e.getKey(),
                    median(list, x -> x.client().userNanos() / 1e3 / x.messages()),
                    median(list, x -> x.client().systemNanos() / 1e3 / x.messages()),
                    median(list, Sample::brokerMicrosPerMsg),
                    median(list, x -> (double) x.client().contextSwitches() / x.messages()),
                    median(list, x -> (double) x.brokerSched().contextSwitches() / x.messages())));
        }
        sb.append("\nUser/system split at the kernel's 10 ms tick, so treat single rounds as ±10 %.\n\n");
        List<String> pgModes = phase.samples.keySet().stream().filter(Modes::usesPostgres).toList();
        // (the other stores' rows follow in storeTable)
        if (!pgModes.isEmpty()) {
            sb.append("#### PostgreSQL rows: commits and CPU per message (medians)\n\n"
                    + "| mode | msg/s | commits/msg | client µs/msg | broker µs/msg | PostgreSQL µs/msg | total µs/msg "
                    + "|\n|---|---:|---:|---:|---:|---:|---:|\n");
            for (String mode : pgModes) {
                List<Sample> list = phase.samples.get(mode);
                sb.append(String.format(Locale.ROOT, "| `%s` | %s | %s | %s | %s | %s | %s |%n", mode,
                        fmt(phase.rate(mode)), num(median(list, Sample::commitsPerMsg), 3),
                        num(median(list, Sample::clientMicrosPerMsg), 1), num(median(list, Sample::brokerMicrosPerMsg), 1),
                        num(median(list, Sample::pgMicrosPerMsg), 1), num(median(list,
                                x -> x.clientMicrosPerMsg() + x.brokerMicrosPerMsg() + x.pgMicrosPerMsg()), 1)));
            }
            sb.append("\nCommits: the database's `pg_stat_database.xact_commit` before and after the measurement (the "
                    + "measured pool is closed first so that every backend has reported), less what opening and "
                    + "closing an idle pool of the same size costs (its connections' set-up queries and the harness's "
                    + "own reads, measured once per size: " + postgres.poolOverheadText() + "). Left in: the store's "
                    + "schema statements and Camel's table check at start, a few commits per measurement. "
                    + "PostgreSQL CPU: user + system time of the postmaster and all its processes, living or ended, "
                    + "over the timed window.\n\n");
        }
        sb.append(sendingComparison(phase));
        sb.append(storeTable(phase));
        return sb.toString();
    }

    /** The MariaDB and Redis rows: what each message cost the store server, next to PostgreSQL's defaults. */
    private String storeTable(Phase phase) {
        List<String> rows = phase.samples.keySet().stream()
                .filter(m -> Modes.server(m) != null && Modes.server(m) != Modes.Server.POSTGRES).toList();
        if (rows.isEmpty()) {
            return "";
        }
        List<String> all = new ArrayList<>();
        if (phase.samples.containsKey("postgres-default-4")) {
            all.add("postgres-default-4");
        }
        all.addAll(rows);
        StringBuilder sb = new StringBuilder("#### Store rows: server round trips and CPU per message (medians)\n\n"
                + "| mode | store server | msg/s | ratio to `raw-pool4` | commits/msg (Redis: script calls/msg) "
                + "| MariaDB: redo log writes/msg; Redis: commands/msg | client µs/msg | broker µs/msg | store server µs/msg | total µs/msg |\n"
                + "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (String mode : all) {
            List<Sample> list = phase.samples.get(mode);
            Modes.Server server = Modes.server(mode);
            String where = switch (server) {
                case REDIS -> Modes.redisMasters(mode) == 0 ? "Redis standalone"
                        : "Redis Cluster, " + Modes.redisMasters(mode) + " master"
                        + (Modes.redisMasters(mode) == 1 ? "" : "s");
                default -> server.label;
            };
            sb.append(String.format(Locale.ROOT, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", mode, where,
                    fmt(phase.rate(mode)), num(phase.ratio(mode), 2), num(median(list, Sample::commitsPerMsg), 3),
                    num(median(list, Sample::logSyncsPerMsg), 3), num(median(list, Sample::clientMicrosPerMsg), 1),
                    num(median(list, Sample::brokerMicrosPerMsg), 1),
                    num(median(list, Sample::pgMicrosPerMsg), 1), num(median(list,
                            x -> x.clientMicrosPerMsg() + x.brokerMicrosPerMsg() + x.pgMicrosPerMsg()), 1)));
        }
        sb.append("\nMariaDB: commits are the server's `Handler_commit`, which counts a commit call into the storage "
                + "engine at the end of every statement as well as of every transaction (Camel's SELECT, INSERT, "
                + "COMMIT count 3), so it is about the statements per message; what reaches the disk are the redo log "
                + "writes, its `Innodb_log_writes` (each a synchronous write at `innodb_flush_log_at_trx_commit=1`; group "
                + "commit lets one serve several transactions), both global counters read before and after the "
                + "measurement, including the pool's connection set-up (a few dozen per measurement). Redis: script "
                + "calls are `EVALSHA`/`EVAL` from `INFO commandstats` summed over the servers: every store call is "
                + "one script per slot it touches, so this is the round trips (Lettuce pipelines the consumer "
                + "threads' calls on one connection per node); commands are `total_commands_processed`, which also "
                + "counts the commands the scripts ran and the cluster client's topology refreshes, less the "
                + "harness's own INFO reads. PostgreSQL's row is repeated from the table above for comparison. "
                + "Store server CPU: user + system time of "
                + "`mariadbd`, or of all the `redis-server` processes of the row together (a cluster's masters "
                + "summed), over the timed window.\n\n");
        return sb.toString();
    }

    /**
     * Each AceMQ row measured with the fingerprint on (the default) and off in this phase: both against the raw
     * baseline, and on / off paired round by round (the two run one right after the other in every round).
     */
    String fingerprintComparison(Phase phase) {
        StringBuilder sb = new StringBuilder();
        for (String off : phase.samples.keySet()) {
            if (!Modes.fingerprintOff(off) || !phase.samples.containsKey(Modes.fingerprintOnTwin(off))) {
                continue;
            }
            String on = Modes.fingerprintOnTwin(off);
            List<Sample> a = phase.samples.get(on);
            List<Sample> b = phase.samples.get(off);
            double[] perRound = new double[Math.min(a.size(), b.size())];
            for (int i = 0; i < perRound.length; i++) {
                perRound[i] = a.get(i).rate() / b.get(i).rate();
            }
            double[] sorted = perRound.clone();
            Arrays.sort(sorted);
            double med = sorted.length % 2 == 1 ? sorted[sorted.length / 2]
                    : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
            StringBuilder rounds = new StringBuilder();
            for (double r : perRound) {
                rounds.append(rounds.length() == 0 ? "" : " ").append(num(r, 2));
            }
            double cpuOn = median(a, Sample::clientMicrosPerMsg);
            double cpuOff = median(b, Sample::clientMicrosPerMsg);
            log(String.format(Locale.ROOT, "%s fingerprint on/off: %s / %s = %.2f (rounds %s; min %.2f, max %.2f);"
                    + " ratio to %s on %.2f, off %.2f; client CPU %.1f / %.1f us/msg", phase.name(), on, off, med,
                    rounds, sorted[0], sorted[sorted.length - 1], Modes.baseline(on), phase.ratio(on),
                    phase.ratio(off), cpuOn, cpuOff));
            if (sb.length() == 0) {
                sb.append("#### Fingerprint on (the default, `Fingerprint.body()`) and off (`Fingerprint.off()`)\n\n"
                        + "| rows (on / off) | on msg/s | ratio to raw | off msg/s | ratio to raw | on / off (median of "
                        + "rounds) | on / off by round | spread (max − min) | client CPU µs/msg on / off |\n"
                        + "|---|---:|---:|---:|---:|---:|---|---:|---|\n");
            }
            sb.append(String.format(Locale.ROOT, "| `%s` / `%s` | %s | %s | %s | %s | **%s** | %s | %s | %s / %s |%n",
                    on, off, fmt(phase.rate(on)), num(phase.ratio(on), 2), fmt(phase.rate(off)),
                    num(phase.ratio(off), 2), num(med, 2), rounds, num(sorted[sorted.length - 1] - sorted[0], 2),
                    num(cpuOn, 1), num(cpuOff, 1)));
        }
        if (sb.length() > 0) {
            sb.append("\nRatios to raw as in the table above (same phase, same thread shape). On / off: the rate with "
                    + "the fingerprint on divided by the rate with it off, in each round (the two rows run one right "
                    + "after the other, the fingerprint-off row first in every even round); below 1 means the fingerprint costs throughput. Read it against the spread: "
                    + "a median inside the rounds' range around 1 is no difference this run can show.\n\n");
        }
        return sb.toString();
    }

    private int count(String mode) {
        return Modes.server(mode) != null ? options.pgMessages : options.messages;
    }

    private static String roundList(List<Sample> list) {
        StringBuilder sb = new StringBuilder();
        for (Sample s : list) {
            if (sb.length() > 0) {
                sb.append(' ');
            }
            double k = s.rate() / 1000;
            sb.append(k < 10 ? String.format(Locale.ROOT, "%.1f", k) : Long.toString(Math.round(k)));
        }
        return sb.toString();
    }

    private Sample measure(Phase phase, String mode, int n) throws Exception {
        String queue = "bench." + mode + "." + sequence.incrementAndGet();
        fill(queue, n, phase.durable);
        System.gc();
        Thread.sleep(300);
        int threads = Modes.threads(mode);
        ProcessHandle b = broker.handle();
        if (mode.equals("raw") || mode.startsWith("raw-pool")) {
            return raw(queue, n, mode.equals("raw") ? 0 : threads, mode);
        }
        if (mode.startsWith("memory-")) {
            return runtime(mode, queue, n, threads, CREDIT - threads, memoryStore(n), e -> { }, null);
        }
        if (mode.startsWith("spring-")) {
            Sample s = PeerConsumers.spring(client, HOST, broker.port(), queue, n, threads, CREDIT / threads, b, mode);
            checkDrained(queue, mode);
            return s;
        }
        if (mode.startsWith("camel-memory-")) {
            // the repository the Camel documentation shows: an LRU map of 1,000 keys
            Sample s = PeerConsumers.camel(HOST, broker.port(), queue, n, threads, CREDIT / threads,
                    MemoryIdempotentRepository.memoryIdempotentRepository(), options.camelUriOptions, b, null, mode);
            checkDrained(queue, mode);
            return s;
        }
        Modes.Server server = Modes.server(mode);
        if (server == Modes.Server.MARIADB) {
            return mariaDb(mode, queue, n, threads, b);
        }
        if (server == Modes.Server.REDIS) {
            return redis(mode, queue, n, threads);
        }
        String table = (mode.startsWith("camel") ? "camel_bench_" : "acemq_bench_") + sequence.incrementAndGet();
        boolean tuned = mode.startsWith("postgres-tuned-");
        Sample s;
        long commits0;
        int poolSize = tuned ? options.pgTunedPool : options.pgPool;
        long poolOverhead = postgres.poolOverhead(poolSize);
        try (HikariDataSource pool = postgres.pool(poolSize, "store")) {
            if (mode.startsWith("camel-jdbc-")) {
                // the schema the Camel SQL component documentation gives, with its primary key
                postgres.execute("CREATE TABLE " + table + " (processorName VARCHAR(255), messageId VARCHAR(100), "
                        + "createdAt TIMESTAMP, PRIMARY KEY (processorName, messageId))");
                JdbcMessageIdRepository repository = new JdbcMessageIdRepository(pool, "bench");
                repository.setTableName(table);
                commits0 = postgres.settledCommits();
                s = PeerConsumers.camel(HOST, broker.port(), queue, n, threads, CREDIT / threads, repository,
                        options.camelUriOptions, b, postgres, mode);
            } else {
                JdbcIdempotencyStore.Builder builder = JdbcIdempotencyStore.builder(pool).tableName(table);
                JdbcIdempotencyStore store = (tuned ? GroupCommit.parse(options.pgTunedGroupCommit).apply(builder)
                        : builder).build();
                store.createSchema();
                MessageHandler handler = postgresHandler(mode, store, pool, rowsTable(table), sentQueue(queue));
                commits0 = postgres.settledCommits();
                s = runtime(mode, queue, n, threads, CREDIT - threads, store, handler, postgres);
            }
        }
        s = s.withCommits(postgres.settledCommits() - commits0 - poolOverhead);
        if (Modes.transactional(mode)) {
            checkRows(rowsTable(table), n, mode);
        }
        if (Modes.sends(mode) > 0) {
            checkSent(phase, sentQueue(queue), n * Modes.sends(mode), mode);
        }
        postgres.execute("DROP TABLE IF EXISTS " + table);
        postgres.execute("DROP TABLE IF EXISTS " + table + "_outbox"); // the store's outbox, made by createSchema()
        if (mode.startsWith("camel")) {
            checkDrained(queue, mode);
        }
        return s;
    }

    /** @return the business table of a {@code postgres-tx-*} row measured with the store table {@code table} */
    private static String rowsTable(String table) {
        return table + "_rows";
    }

    /** @return the queue a sending row measured on {@code queue} sends to: its own, on the same broker */
    private static String sentQueue(String queue) {
        return queue + ".sent";
    }

    /**
     * The handler of an AceMQ row on PostgreSQL: a no-op for the store rows; for {@code postgres-tx-*} a
     * {@link JdbcTransactionalHandler} (on the store's pool) that inserts one row per message into {@code rows},
     * created here; for the sending rows one {@code envelope.send} per message to {@code sentQueue}, a 100-byte
     * {@code Data} body like the incoming ones.
     */
    private MessageHandler postgresHandler(String mode, JdbcIdempotencyStore store, HikariDataSource pool, String rows,
            String sentQueue) throws Exception {
        int sends = Modes.sends(mode);
        if (!Modes.transactional(mode)) {
            return sends == 0 ? e -> { } : e -> {
                for (int i = 0; i < sends; i++) {
                    e.send(sentQueue, OutgoingMessage.of(new byte[BODY]));
                }
            };
        }
        postgres.execute("CREATE TABLE " + rows + " (id text PRIMARY KEY, message_id text NOT NULL)");
        String insert = "INSERT INTO " + rows + " (id, message_id) VALUES (?, ?)";
        return JdbcTransactionalHandler.of(store, pool, (envelope, connection) -> {
            try (java.sql.PreparedStatement ps = connection.prepareStatement(insert)) {
                ps.setString(1, envelope.id());
                ps.setString(2, String.valueOf(envelope.messageId()));
                ps.executeUpdate();
            }
            for (int i = 0; i < sends; i++) {
                envelope.send(sentQueue, OutgoingMessage.of(new byte[BODY]));
            }
        });
    }

    /**
     * Fails unless the business table of a {@code postgres-tx-*} row holds exactly one row per message (read after the
     * commits were counted, so the read is not among them), then drops it.
     */
    private void checkRows(String rows, int n, String mode) throws Exception {
        long count;
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(postgres.url(), postgres.user(),
                postgres.password());
             java.sql.Statement st = c.createStatement();
             java.sql.ResultSet rs = st.executeQuery("SELECT count(*) FROM " + rows)) {
            rs.next();
            count = rs.getLong(1);
        }
        postgres.execute("DROP TABLE IF EXISTS " + rows);
        if (count != n) {
            throw new IllegalStateException(mode + ": " + count + " business rows for " + n + " messages");
        }
    }

    /**
     * Takes every message a sending row sent off its queue (after the measurement, outside the timed window) and
     * fails unless each of the {@code expected} message-ids arrived; copies of an id (a dispatch repeated, which the
     * guarantee allows and an idempotent receiver absorbs) are counted, not failed.
     */
    private void checkSent(Phase phase, String queue, int expected, String mode) throws Exception {
        java.util.Set<Object> ids = new java.util.HashSet<>();
        long received = 0;
        try (Connection c = client.connect(HOST, broker.port());
             Receiver r = c.openReceiver(queue, new ReceiverOptions().creditWindow(CREDIT))) {
            while (ids.size() < expected) {
                Delivery d = r.receive(30, TimeUnit.SECONDS);
                if (d == null) {
                    throw new IllegalStateException(mode + ": only " + ids.size() + " of the " + expected
                            + " messages its handler sent arrived on " + queue);
                }
                received++;
                ids.add(d.message().messageId());
            }
            for (Delivery d = r.receive(300, TimeUnit.MILLISECONDS); d != null;
                    d = r.receive(300, TimeUnit.MILLISECONDS)) {
                received++;
                ids.add(d.message().messageId());
            }
        }
        if (ids.size() != expected) {
            throw new IllegalStateException(mode + ": " + ids.size() + " distinct message-ids arrived on " + queue
                    + ", but its handler sent " + expected);
        }
        long[] t = phase.sent.computeIfAbsent(mode, k -> new long[4]);
        t[0]++;
        t[1] += expected;
        t[2] += ids.size();
        t[3] += received - ids.size();
    }

    /**
     * Each sending row measured in this phase beside its consume-only twin: both rates, their ratio (of the medians,
     * and round by round: the two run one right after the other), both rows' commits per message, and what arrived on
     * the sent queues; against the target of at least half the consume-only rate at no more commits per message.
     */
    String sendingComparison(Phase phase) {
        StringBuilder sb = new StringBuilder();
        for (String send : phase.samples.keySet()) {
            if (Modes.sends(send) == 0 || !phase.samples.containsKey(Modes.consumeOnlyTwin(send))) {
                continue;
            }
            String only = Modes.consumeOnlyTwin(send);
            List<Sample> a = phase.samples.get(send);
            List<Sample> b = phase.samples.get(only);
            StringBuilder rounds = new StringBuilder();
            for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
                rounds.append(rounds.length() == 0 ? "" : " ").append(num(a.get(i).rate() / b.get(i).rate(), 2));
            }
            double ratio = phase.rate(send) / phase.rate(only);
            double cSend = median(a, Sample::commitsPerMsg);
            double cOnly = median(b, Sample::commitsPerMsg);
            // "not above": the outbox's marks ride commits that happen anyway, but the last ones of a measurement have
            // no later transaction to ride and commit on their own (the store's flush, the relay's close); one or two
            // commits per measurement is the resolution of the comparison, and anything above it counts as above
            double resolution = 2.0 / a.get(0).messages();
            boolean met = ratio >= 0.5 && cSend <= cOnly + resolution;
            long[] t = phase.sent.getOrDefault(send, new long[4]);
            log(String.format(Locale.ROOT, "%s sending / consume only: %s / %s = %.2f (rounds %s); commits/msg %.4f"
                    + " / %.4f; sent %,d, arrived %,d distinct, %,d extra copies -> %s", phase.name(), send, only,
                    ratio, rounds, cSend, cOnly, t[1], t[2], t[3], met ? "met" : "not met"));
            if (sb.length() == 0) {
                sb.append("#### Sending: one send per message against consume only (medians)\n\n"
                        + "| sending row / consume-only row | sending msg/s | consume only msg/s | sending / consume only "
                        + "| by round | commits/msg sending / consume only | client / PostgreSQL µs/msg sending "
                        + "(consume only) | sent, arrived (distinct), extra copies | target ≥ 0.5 × and commits/msg "
                        + "not above |\n|---|---:|---:|---:|---|---|---|---|---|\n");
            }
            sb.append(String.format(Locale.ROOT, "| `%s` / `%s` | %s | %s | **%s** | %s | %s / %s | %s / %s (%s / %s) "
                    + "| %,d, %,d, %,d | %s |%n", send, only, fmt(phase.rate(send)), fmt(phase.rate(only)),
                    num(ratio, 2), rounds, num(cSend, 4), num(cOnly, 4), num(median(a, Sample::clientMicrosPerMsg), 1),
                    num(median(a, Sample::pgMicrosPerMsg), 1), num(median(b, Sample::clientMicrosPerMsg), 1),
                    num(median(b, Sample::pgMicrosPerMsg), 1), t[1], t[2], t[3], met ? "**met**" : "not met"));
        }
        if (sb.length() > 0) {
            sb.append("\nThe sending rows' handlers send one message (100-byte `Data` body) per message handled to a "
                    + "queue of their own on the same broker; after each measurement (outside the timed window) the "
                    + "harness takes them all off that queue and fails the run unless every message-id arrived "
                    + "(sent and arrived count every measurement of the row, warm-up included). The timed window ends "
                    + "when the last incoming message is accepted and the broker has accepted every message the "
                    + "handlers sent, so the sends are inside it (from the outbox they go out after the incoming "
                    + "message's commit, on the consumer's outbox relay). `postgres-tx-*` rows also check that their business table "
                    + "holds one row per message. Commits per message \"not above\" allows two commits per measurement "
                    + "(0.0001 at 20,000 messages): the outbox's dispatched marks ride transactions that commit anyway, "
                    + "and only the last marks of a measurement, with no later transaction to ride, commit on their "
                    + "own.\n\n");
        }
        return sb.toString();
    }

    /** AceMQ with the JDBC store's defaults, or Camel's JDBC repository, on the durable MariaDB. */
    private Sample mariaDb(String mode, String queue, int n, int threads, ProcessHandle b) throws Exception {
        boolean camel = mode.startsWith("camel-");
        String table = (camel ? "camel_bench_" : "acemq_bench_") + sequence.incrementAndGet();
        Sample s;
        long[] before;
        try (HikariDataSource pool = mariadb.pool(options.pgPool, "store")) {
            if (camel) {
                // the camel-sql documentation's schema, with its primary key; Camel's own statements (SELECT
                // COUNT(*) ... WHERE processorName = ? AND messageId = ?, then INSERT) are plain SQL that MariaDB runs
                mariadb.execute("CREATE TABLE " + table + " (processorName VARCHAR(255), messageId VARCHAR(100), "
                        + "createdAt TIMESTAMP NULL, PRIMARY KEY (processorName, messageId))");
                JdbcMessageIdRepository repository = new JdbcMessageIdRepository(pool, "bench");
                repository.setTableName(table);
                before = mariadb.counters();
                s = PeerConsumers.camel(HOST, broker.port(), queue, n, threads, CREDIT / threads, repository,
                        options.camelUriOptions, b, mariadb, mode);
            } else {
                JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool).tableName(table).build();
                store.createSchema();
                before = mariadb.counters();
                s = runtime(mode, queue, n, threads, CREDIT - threads, store, e -> { }, mariadb);
            }
        }
        long[] after = mariadb.counters();
        s = s.withCommits(after[0] - before[0], after[1] - before[1]);
        mariadb.execute("DROP TABLE IF EXISTS " + table);
        mariadb.execute("DROP TABLE IF EXISTS " + table + "_outbox"); // the store's outbox, made by createSchema()
        if (camel) {
            checkDrained(queue, mode);
        }
        return s;
    }

    /** AceMQ with the Redis store's defaults on the standalone server or a cluster of M masters. */
    private Sample redis(String mode, String queue, int n, int threads) throws Exception {
        BenchRedis r = redis.get(Modes.redisMasters(mode));
        RedisIdempotencyStore store = r.masters() == 0
                ? RedisIdempotencyStore.builder((io.lettuce.core.RedisClient) r.client()).build()
                : RedisIdempotencyStore.builder((io.lettuce.core.cluster.RedisClusterClient) r.client()).build();
        Sample s;
        long[] before;
        try {
            before = r.commands();
            s = runtime(mode, queue, n, threads, CREDIT - threads, store, e -> { }, r);
        } finally {
            store.close();
        }
        long[] after = r.commands();
        // the second read counts the first one's two INFO commands on every server
        s = s.withCommits(after[0] - before[0], after[1] - before[1] - 2L * r.servers());
        r.flushAll();
        return s;
    }

    /** Fails when a peer left a message on the queue: it did not settle everything it counted. */
    private void checkDrained(String queue, String mode) throws Exception {
        checkDrained(client, broker.port(), queue, mode);
    }

    /** Fails when a message is left on {@code queue} of the broker at {@code port}. */
    static void checkDrained(Client client, int port, String queue, String mode) throws Exception {
        try (Connection c = client.connect(HOST, port);
             Receiver r = c.openReceiver(queue, new ReceiverOptions().creditWindow(10).autoAccept(false))) {
            Delivery d = r.receive(300, TimeUnit.MILLISECONDS);
            if (d != null) {
                d.release();
                throw new IllegalStateException(mode + ": a message was left on " + queue + " after the consumer "
                        + "stopped (it was not settled)");
            }
        }
    }

    /**
     * A fresh unbounded in-memory store already holding {@code storePreload} confirmed ids, so its hash table is at the
     * size a long-running consumer's would be and no eviction ever runs. It is presized
     * ({@code expectedEntries}) for the pre-loaded ids plus the {@code messages} of the measurement, so the table
     * never grows inside the measurement, whatever {@code --store-preload} is.
     */
    private InMemoryIdempotencyStore memoryStore(int messages) {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder()
                .maxEntries(InMemoryIdempotencyStore.UNBOUNDED)
                .expectedEntries((int) Math.min(Integer.MAX_VALUE, (long) options.storePreload + messages)).build();
        for (int i = 0; i < options.storePreload; i++) {
            String id = "preload-" + i;
            store.tryClaim(id);
            store.confirm(id);
        }
        return store;
    }

    /** Sends n messages with 100-byte bodies, pipelined, and waits until the broker accepted them. */
    void fill(String queue, int n, boolean durable) throws Exception {
        fill(client, broker.port(), queue, n, durable);
    }

    /** Sends n messages with 100-byte bodies to a queue on the broker at {@code port}, pipelined, and waits. */
    static void fill(Client client, int port, String queue, int n, boolean durable) throws Exception {
        try (Connection c = client.connect(HOST, port); Sender sender = c.openSender(queue)) {
            ArrayDeque<Tracker> window = new ArrayDeque<>();
            for (int i = 0; i < n; i++) {
                byte[] body = new byte[BODY];
                Message<byte[]> m = Message.create(body).messageId(queue + ":" + i).durable(durable);
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

    private Sample raw(String queue, int n, int poolThreads, String mode) throws Exception {
        Sample.Meter meter = Sample.Meter.start(broker.handle(), null);
        Sample sample;
        ExecutorService pool = poolThreads > 0 ? Executors.newFixedThreadPool(poolThreads) : null;
        try (Connection c = client.connect(HOST, broker.port())) {
            Receiver r = c.openReceiver(queue, new ReceiverOptions().creditWindow(CREDIT).autoAccept(false));
            if (pool == null) {
                for (int i = 0; i < n; i++) {
                    Delivery d = r.receive(STALL.toSeconds(), TimeUnit.SECONDS);
                    if (d == null) {
                        throw new IllegalStateException("raw: only " + i + " of " + n + " received");
                    }
                    d.message().body();
                    d.accept();
                }
                sample = meter.stop(mode, 1, n);
            } else {
                Semaphore inFlight = new Semaphore(CREDIT);
                CountDownLatch done = new CountDownLatch(n);
                for (int i = 0; i < n; i++) {
                    Delivery d = r.receive(STALL.toSeconds(), TimeUnit.SECONDS);
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
                sample = meter.stop(mode, poolThreads, n);
            }
            r.close();
        } finally {
            if (pool != null) {
                pool.shutdown();
            }
        }
        return sample;
    }

    /**
     * Counts deliveries the runtime settled as processed (anything else is a benchmark error) and, for a sending row,
     * the messages the broker accepted from its handlers.
     */
    static final class Counter implements ConsumerObserver {
        final CountDownLatch done;
        final CountDownLatch sent;
        final AtomicInteger other = new AtomicInteger();

        Counter(int n, int sends) {
            done = new CountDownLatch(n);
            sent = new CountDownLatch(sends);
        }

        @Override
        public void sent(org.acemq.amqp.consumer.SendPath path, org.acemq.amqp.consumer.SendResult result,
                         long nanos) {
            if (result == org.acemq.amqp.consumer.SendResult.ACCEPTED) {
                sent.countDown();
            }
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
                           MessageHandler handler, BenchEnv.StoreServer pg) throws Exception {
        // a sending row's window ends when the last incoming message is accepted and every message its handlers sent
        // was accepted by the broker (the outbox's dispatch may follow the incoming message's accept)
        Counter counter = new Counter(n, n * Modes.sends(mode));
        Sample.Meter meter = Sample.Meter.start(broker.handle(), pg);
        int batchSize = Modes.batchSize(mode);
        // a batch row's handler does per message what the single-message row's does: nothing
        Subscription.Builder subscription = (batchSize > 0
                ? Subscription.batchBuilder(queue, batch -> batch.forEach(e -> { })).batchSize(batchSize)
                : Subscription.builder(queue, handler)).concurrency(threads).prefetch(prefetch);
        if (Modes.fingerprintOff(mode)) {
            subscription.fingerprint(Fingerprint.off());
        }
        AmqpConsumer consumer = AmqpConsumer.builder().name("bench").broker(HOST, broker.port()).store(store)
                .observer(counter).subscribe(subscription.build()).start();
        Sample s;
        try {
            awaitAll(counter.done, mode, n, () -> "; " + counter.other.get() + " settled otherwise than accepted as "
                    + "processed; " + consumer.health());
            awaitAll(counter.sent, mode + " (messages sent)", n * Modes.sends(mode), () -> "; " + consumer.health());
            s = meter.stop(mode, threads, n);
        } finally {
            consumer.close(Duration.ofSeconds(30));
        }
        if (counter.other.get() > 0) {
            throw new IllegalStateException(mode + ": " + counter.other.get() + " deliveries settled otherwise than "
                    + "accepted as processed");
        }
        // the observer hears "settled" when a disposition is handed to the I/O thread: the broker must have them all
        checkDrained(queue, mode);
        return s;
    }

    /**
     * Waits until {@code done} reaches zero; fails when it stops moving for {@link #STALL}.
     *
     * @throws IllegalStateException naming the mode and how far it got
     */
    static void awaitAll(CountDownLatch done, String mode, int n) throws InterruptedException {
        awaitAll(done, mode, n, () -> "");
    }

    /**
     * {@link #awaitAll(CountDownLatch, String, int)}, with {@code detail} (the consumer's state: deliveries settled
     * otherwise, its health) at the end of the stall's message, so that a stall says whether nothing came or
     * everything went elsewhere.
     */
    static void awaitAll(CountDownLatch done, String mode, int n, java.util.function.Supplier<String> detail)
            throws InterruptedException {
        long last = done.getCount();
        long lastMove = System.nanoTime();
        while (!done.await(1, TimeUnit.SECONDS)) {
            long now = done.getCount();
            if (now != last) {
                last = now;
                lastMove = System.nanoTime();
            } else if (System.nanoTime() - lastMove > STALL.toNanos()) {
                throw new IllegalStateException(mode + ": stalled at " + (n - now) + " of " + n + " handled for "
                        + STALL.toSeconds() + " s" + detail.get());
            }
        }
    }

    private List<Sample> nonDurableRaw() {
        Phase p = phase(false);
        return p == null ? null : p.samples.get("raw");
    }

    private static String fmt(double v) {
        return Double.isNaN(v) ? "—" : String.format(Locale.ROOT, "%,.0f", v);
    }

    private static String num(double v, int decimals) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "—" : String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    // ------------------------------------------------------------------ latency at half load

    private String latency() throws Exception {
        PacedLatency paced = new PacedLatency(new PacedLatency.Env() {
            @Override
            public Client client() {
                return client;
            }

            @Override
            public int port() {
                return broker.port();
            }

            @Override
            public String queue(String prefix) {
                return prefix + "." + sequence.incrementAndGet();
            }

            @Override
            public InMemoryIdempotencyStore memoryStore() {
                // sized for the pre-loaded ids; a latency measurement's messages fit in the table's head-room
                return EndToEndBenchmark.this.memoryStore(0);
            }
        }, options.latencyPublishers);
        StringBuilder sb = new StringBuilder();
        double rate;
        String definition;
        if (options.latencyRate > 0) {
            rate = options.latencyRate;
            definition = String.format(Locale.ROOT, "%,.0f msg/s, set with `--latency-rate`", rate);
        } else {
            // full load = the rate at which publishing and consuming keep up together on this box, probed for
            // both consumers; half load is half the lower of the two, so that neither runs above half its capacity
            List<Sample> rawSamples = nonDurableRaw();
            double cap = rawSamples != null ? median(rawSamples, Sample::rate) : 200_000;
            log("latency: probing the sustainable publish + consume rate (" + options.latencyPublishers
                    + " publishers, " + options.latencyProbeSeconds + " s probes)");
            paced.warmUp(10_000, 3);
            double fullRaw = paced.sustainable(PacedLatency.RAW, 10_000, cap, options.latencyProbeSeconds);
            double fullRuntime = paced.sustainable(PacedLatency.RUNTIME, Math.max(2_000, fullRaw / 1.3),
                    Math.max(2_000, fullRaw * 1.5), options.latencyProbeSeconds);
            double full = Math.min(fullRaw, fullRuntime);
            rate = Math.floor(full / 2 / 100) * 100;
            log(String.format(Locale.ROOT, "latency: sustainable %,.0f msg/s with raw, %,.0f with the runtime;"
                    + " half load %,.0f msg/s", fullRaw, fullRuntime, rate));
            definition = String.format(Locale.ROOT, "%,.0f msg/s requested = half of %,.0f msg/s, the lower of the "
                    + "sustainable publish + consume rates probed on this box: raw protonj2 %,.0f msg/s, runtime "
                    + "(`memory-4`) %,.0f msg/s%s", rate, full, fullRaw, fullRuntime,
                    fullRuntime >= fullRaw * 1.5 ? " (probe cap: 1.5 × raw)" : "");
            sb.append(latencyProbes(paced));
        }
        int total = (int) (rate * options.latencySeconds);
        log(String.format(Locale.ROOT, "latency at %,.0f msg/s for %d s, %d rounds", rate, options.latencySeconds,
                options.latencyRounds));
        // warm-up at the measured rate (dropped), then raw, [raw-pool4,] runtime interleaved
        List<String> modes = options.latencyPool4
                ? List.of(PacedLatency.RAW, PacedLatency.RAW_POOL4, PacedLatency.RUNTIME)
                : List.of(PacedLatency.RAW, PacedLatency.RUNTIME);
        for (String mode : modes) {
            logRun("warm-up", paced.run(mode, rate, (int) Math.max(2_000, rate * 2), 0.1));
        }
        Map<String, List<PacedLatency.Run>> runs = new LinkedHashMap<>();
        for (int round = 1; round <= options.latencyRounds; round++) {
            for (String mode : modes) {
                runs.computeIfAbsent(mode, k -> new ArrayList<>())
                        .add(logRun("round " + round, paced.run(mode, rate, total, 0.1)));
            }
        }
        List<PacedLatency.Run> raw = runs.get(PacedLatency.RAW);
        List<PacedLatency.Run> rt = runs.get(PacedLatency.RUNTIME);
        long[] rawAll = concat(raw, PacedLatency.Run::fromScheduled);
        long[] rtAll = concat(rt, PacedLatency.Run::fromScheduled);
        boolean valid = raw.stream().allMatch(PacedLatency.Run::valid) && rt.stream().allMatch(PacedLatency.Run::valid);
        double added50 = (pct(rtAll, 50) - pct(rawAll, 50)) / 1e3;
        double added99 = (pct(rtAll, 99) - pct(rawAll, 99)) / 1e3;
        double added999 = (pct(rtAll, 99.9) - pct(rawAll, 99.9)) / 1e3;

        sb.insert(0, String.format(Locale.ROOT, "### Added latency at half load (%s; %d s per measurement, %d "
                + "measurements each, interleaved, after one warm-up each; first 10%% of each dropped)%n%n", definition,
                options.latencySeconds, options.latencyRounds));
        sb.append("| consumer | measurement | load (1 min) | requested msg/s | reached msg/s | p50 | p99 | p99.9 "
                + "| p99 from actual send | valid |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (int i = 0; i < options.latencyRounds; i++) {
            for (String mode : modes) {
                sb.append(latencyRow(consumerName(mode), "round " + (i + 1), runs.get(mode).get(i)));
            }
        }
        for (String mode : modes) {
            sb.append(latencyAll(consumerName(mode), runs.get(mode),
                    concat(runs.get(mode), PacedLatency.Run::fromScheduled)));
        }
        if (valid) {
            sb.append(String.format(Locale.ROOT, "| **added by the runtime** | all | | | | **%s** | **%s** | **%s** | | |%n",
                    micros(added50 * 1e3), micros(added99 * 1e3), micros(added999 * 1e3)));
            for (int i = 0; i < options.latencyRounds; i++) {
                sb.append(addedRow("added by the runtime", "round " + (i + 1), raw.get(i).fromScheduled(),
                        rt.get(i).fromScheduled()));
            }
            if (options.latencyPool4) {
                sb.append(addedRow("of which one thread hop? (raw-pool4 − raw)", "all", rawAll,
                        concat(runs.get(PacedLatency.RAW_POOL4), PacedLatency.Run::fromScheduled)));
            }
            sb.append('\n');
            // the target is a 1 ms difference; say so when the baseline itself moves more than that between rounds
            double worstRound = Double.NEGATIVE_INFINITY;
            double rawMin = Double.POSITIVE_INFINITY;
            double rawMax = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < options.latencyRounds; i++) {
                double r99 = pct(raw.get(i).fromScheduled(), 99);
                worstRound = Math.max(worstRound, pct(rt.get(i).fromScheduled(), 99) - r99);
                rawMin = Math.min(rawMin, r99);
                rawMax = Math.max(rawMax, r99);
            }
            boolean met = added99 <= 1000 && worstRound <= 1e6;
            double noise = (rawMax - rawMin) / 1e3;
            sb.append(String.format(Locale.ROOT, "Target: added p99 ≤ 1 ms (over all samples and in every round): "
                    + "%s; worst round %s.", met ? "**met**" : "not met", micros(worstRound)));
            latencyVerdict = String.format(Locale.ROOT, "%s: added p99 %s over all samples, worst round %s; raw p99 "
                    + "%s to %s between rounds", met ? "met" : "not met", micros(added99 * 1e3), micros(worstRound),
                    micros(rawMin), micros(rawMax));
            latencyConclusive = noise <= 1000;
            if (noise > 1000) {
                sb.append(String.format(Locale.ROOT, " **Inconclusive at this machine load:** raw protonj2's own p99 "
                        + "moved by %s between rounds (%s to %s), more than the 1 ms being tested; re-run on a "
                        + "quieter machine.", micros(noise * 1e3), micros(rawMin), micros(rawMax)));
            }
            sb.append("\n\n");
        } else {
            sb.append("| **added by the runtime** | | | | | not measurable | not measurable | not measurable | | |\n\n");
            sb.append("Target: added p99 ≤ 1 ms: not measurable (a measurement missed the requested rate by more "
                    + "than 5 % or lost messages).\n\n");
            latencyVerdict = "not measurable: a measurement missed the requested rate by more than 5 % or lost messages";
            latencyConclusive = false;
        }
        sb.append(String.format(Locale.ROOT, "%d publishers (own connections, one thread each) send pre-settled "
                + "messages built before the clock starts; message g is due at start + g / rate and a late publisher "
                + "sends its overdue messages back to back. Latency runs from the **scheduled** send time (so a late "
                + "publisher counts against the consumer: no coordinated omission) to the moment the handler "
                + "(runtime) or receive() (raw) sees the message, System.nanoTime() in one JVM; \"from actual send\" "
                + "starts at the send() call instead. A measurement is valid if the publishers reach ≥ 95 %% of the "
                + "requested rate and every message arrives. Added latency = runtime percentile − raw percentile "
                + "over all kept samples. Diagnostic `raw-pool4` (not part of the target): raw protonj2 whose "
                + "receiving thread hands each delivery to a 4-thread pool that records and accepts: the runtime's "
                + "extra thread hop without the runtime. Load (1 min) is /proc/loadavg when the measurement "
                + "started (2 cores).%n%n", options.latencyPublishers));
        return sb.toString();
    }

    private String latencyProbes(PacedLatency paced) {
        return String.format(Locale.ROOT, "Sustainable-rate probes (%.0f s each, %d publishers; a probe keeps up if "
                + "the publishers reach ≥ 97 %% of the rate, at most 20 ms worth of messages are unconsumed when "
                + "they finish, and the median latency from the scheduled send is ≤ 5 ms; the first 25 %% of each probe "
                + "is not counted in its percentiles):%n%n", options.latencyProbeSeconds, options.latencyPublishers)
                + paced.probeTable() + "\n";
    }

    private static PacedLatency.Run logRun(String what, PacedLatency.Run r) {
        log(String.format(Locale.ROOT, "latency %-8s %-8s requested %,7.0f reached %,7.0f msg/s  p50 %,6.0f  p99 %,8.0f"
                + "  p99.9 %,8.0f us (from send: p99 %,8.0f)%s", what, r.mode(), r.requested(), r.reached(),
                pct(r.fromScheduled(), 50) / 1e3, pct(r.fromScheduled(), 99) / 1e3, pct(r.fromScheduled(), 99.9) / 1e3,
                pct(r.fromSent(), 99) / 1e3, r.valid() ? "" : "  INVALID"));
        return r;
    }

    private static String consumerName(String mode) {
        return switch (mode) {
            case PacedLatency.RAW -> "raw protonj2 (receive + accept)";
            case PacedLatency.RAW_POOL4 -> "diagnostic: raw-pool4 (receive, hand-off, accept)";
            default -> "runtime + in-memory store, 4 threads";
        };
    }

    private static String addedRow(String what, String round, long[] base, long[] other) {
        return String.format(Locale.ROOT, "| %s | %s | | | | %s | %s | %s | | |%n", what, round,
                micros(pct(other, 50) - pct(base, 50)), micros(pct(other, 99) - pct(base, 99)),
                micros(pct(other, 99.9) - pct(base, 99.9)));
    }

    private static String latencyRow(String consumer, String what, PacedLatency.Run r) {
        return String.format(Locale.ROOT, "| %s | %s | %s | %,.0f | %,.0f | %s | %s | %s | %s | %s |%n", consumer,
                what, r.load(), r.requested(), r.reached(), micros(pct(r.fromScheduled(), 50)), micros(pct(r.fromScheduled(), 99)),
                micros(pct(r.fromScheduled(), 99.9)), micros(pct(r.fromSent(), 99)), validity(r));
    }

    private static String latencyAll(String consumer, List<PacedLatency.Run> runs, long[] all) {
        long[] sent = concat(runs, PacedLatency.Run::fromSent);
        double reached = runs.stream().mapToDouble(PacedLatency.Run::reached).min().orElse(Double.NaN);
        boolean valid = runs.stream().allMatch(PacedLatency.Run::valid);
        return String.format(Locale.ROOT, "| **%s** | all | | %,.0f | ≥ %,.0f | **%s** | **%s** | **%s** | %s | %s |%n",
                consumer, runs.get(0).requested(), reached, micros(pct(all, 50)), micros(pct(all, 99)),
                micros(pct(all, 99.9)), micros(pct(sent, 99)), valid ? "yes" : "**no**");
    }

    private static String validity(PacedLatency.Run r) {
        if (!r.rateMet()) {
            return String.format(Locale.ROOT, "**no**: rate not met (%.0f %%)", 100 * r.reached() / r.requested());
        }
        if (!r.complete()) {
            return String.format(Locale.ROOT, "**no**: %d of %d arrived", r.received(), r.total());
        }
        return "yes";
    }

    private static String micros(double nanos) {
        if (nanos >= Long.MAX_VALUE / 2.0) {
            return "lost";
        }
        double us = nanos / 1e3;
        return Math.abs(us) >= 10_000 ? String.format(Locale.ROOT, "%,.1f ms", us / 1e3) : String.format(Locale.ROOT, "%,.0f µs", us);
    }

    private static long[] concat(List<PacedLatency.Run> runs, java.util.function.Function<PacedLatency.Run, long[]> f) {
        long[] r = runs.stream().map(f).flatMapToLong(Arrays::stream).toArray();
        Arrays.sort(r);
        return r;
    }

    // ------------------------------------------------------------------ IO-bound handler

    private String ioBound() throws Exception {
        int[] levels = {1, 8, 64};
        double[] rates = new double[levels.length];
        for (int i = 0; i < levels.length; i++) {
            int c = levels[i];
            int n = c * options.ioPerWorker;
            String queue = "io." + c + "." + sequence.incrementAndGet();
            fill(queue, n, false);
            long[] finished = new long[n];
            AtomicInteger count = new AtomicInteger();
            MessageHandler sleepy = e -> {
                Thread.sleep(10);
                finished[count.getAndIncrement()] = System.nanoTime();
            };
            runtime("io-" + c, queue, n, c, Math.max(c, 100),
                    InMemoryIdempotencyStore.builder().maxEntries(InMemoryIdempotencyStore.UNBOUNDED).build(), sleepy,
                    null);
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

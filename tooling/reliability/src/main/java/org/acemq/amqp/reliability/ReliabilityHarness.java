package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import com.zaxxer.hikari.HikariDataSource;

import org.acemq.amqp.testsupport.AmqpTestClient;

/**
 * The reliability harness: consumers in separate JVMs ({@link HarnessConsumer}) share one queue on a broker
 * ({@link HarnessBroker}: Artemis in this JVM with a persistent journal, or RabbitMQ) and one PostgreSQL store (zonky embedded PostgreSQL behind a {@link TcpProxy}),
 * while the harness publishes a workload of unique messages, duplicates, transient failures and poison messages and
 * injects faults; at the end a checker reads the effects table and the broker's queues.
 *
 * <pre>
 * java -cp tooling/reliability/target/classes:$(cat tooling/reliability/target/classpath.txt) \
 *     org.acemq.amqp.reliability.ReliabilityHarness --messages 100000 --consumers 3 --faults all --mode separate
 * </pre>
 *
 * Options: {@code --messages N} (unique messages, default 2000), {@code --consumers N} (default 3),
 * {@code --faults all|none|kind,kind} (see {@link FaultKind}, labels like {@code kill9,pg-restart,crash-after-claim}),
 * {@code --repeats N} (times each fault kind is injected; default max(1, messages / 20000)),
 * {@code --mode separate|transactional}, {@code --seed N}, {@code --handler-delay-ms N}, {@code --lease-ms N},
 * {@code --timeout-s N}, {@code --work-dir DIR}, {@code --broker artemis|rabbitmq} ({@link HarnessBroker}). Exit code 0 when every check passes, 1 otherwise.
 */
public final class ReliabilityHarness {

    static final String QUEUE = "orders";

    /**
     * @param id a workload id (the AMQP message-id)
     * @return its store key as the runtime makes it: scoped to the queue (the default scope), then the typed id
     */
    static String key(String id) {
        return QUEUE + "|s:" + id;
    }
    static final int MAX_ATTEMPTS = 5;

    private final Config config;
    private final Random random;
    private final Path workDir;
    private final List<String> log = Collections.synchronizedList(new ArrayList<>());
    private final Map<FaultKind, AtomicInteger> injected = new EnumMap<>(FaultKind.class);
    private final Set<String> deadIncarnations = ConcurrentHashMap.newKeySet();
    private final long startNanos = System.nanoTime();

    private ManagedDatabase postgres; // the database server: PostgreSQL or MariaDB (Config.database)
    private TcpProxy proxy;
    private HarnessBroker broker;
    private String brokerKind = "artemis";
    private long sampleMs;
    private HikariDataSource db;
    private final List<ConsumerProcess> slots = new ArrayList<>();
    private volatile boolean stopping;
    private volatile boolean selfPaused;
    private int published;
    private int publishRetries;

    /** What to run. */
    public record Config(int messages, int consumers, Set<FaultKind> faults, int repeats, String mode, long seed,
            long handlerDelayMs, long leaseMs, Duration timeout, Path workDir, double duplicateRatio,
            double transientRatio, int poison, String database) {

        /** The CI-sized defaults for {@code messages} unique messages. */
        public static Config defaults(int messages) {
            return new Config(messages, 3, EnumSet.allOf(FaultKind.class), Math.max(1, messages / 20_000),
                    "separate", 42L, 0, 3_000, Duration.ofMinutes(5), null, 0.05, 0.02,
                    Math.max(4, messages / 500), "postgresql");
        }

        public Config withMode(String m) {
            return new Config(messages, consumers, faults, repeats, m, seed, handlerDelayMs, leaseMs, timeout,
                    workDir, duplicateRatio, transientRatio, poison, database);
        }

        public Config withFaults(Set<FaultKind> f, int r) {
            return new Config(messages, consumers, f, r, mode, seed, handlerDelayMs, leaseMs, timeout, workDir,
                    duplicateRatio, transientRatio, poison, database);
        }

        public Config withConsumers(int c) {
            return new Config(messages, c, faults, repeats, mode, seed, handlerDelayMs, leaseMs, timeout, workDir,
                    duplicateRatio, transientRatio, poison, database);
        }

        public Config withTimeout(Duration t) {
            return new Config(messages, consumers, faults, repeats, mode, seed, handlerDelayMs, leaseMs, t, workDir,
                    duplicateRatio, transientRatio, poison, database);
        }

        public Config withWorkDir(Path dir) {
            return new Config(messages, consumers, faults, repeats, mode, seed, handlerDelayMs, leaseMs, timeout, dir,
                    duplicateRatio, transientRatio, poison, database);
        }

        public Config withHandlerDelayMs(long ms) {
            return new Config(messages, consumers, faults, repeats, mode, seed, ms, leaseMs, timeout, workDir,
                    duplicateRatio, transientRatio, poison, database);
        }

        public Config withSeed(long s) {
            return new Config(messages, consumers, faults, repeats, mode, s, handlerDelayMs, leaseMs, timeout, workDir,
                    duplicateRatio, transientRatio, poison, database);
        }

        /** @param d {@code postgresql} (the default) or {@code mariadb}: the server the store and the harness use */
        public Config withDatabase(String d) {
            if (!d.equals("postgresql") && !d.equals("mariadb")) {
                throw new IllegalArgumentException("--database must be postgresql or mariadb, was " + d);
            }
            return new Config(messages, consumers, faults, repeats, mode, seed, handlerDelayMs, leaseMs, timeout, workDir,
                    duplicateRatio, transientRatio, poison, d);
        }

        public Config withLeaseMs(long ms) {
            return new Config(messages, consumers, faults, repeats, mode, seed, handlerDelayMs, ms, timeout, workDir,
                    duplicateRatio, transientRatio, poison, database);
        }
    }

    public ReliabilityHarness(Config config) {
        this.config = config;
        this.random = new Random(config.seed());
        try {
            this.workDir = config.workDir() != null ? Files.createDirectories(config.workDir())
                    : Files.createTempDirectory("acemq-reliability-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (FaultKind k : FaultKind.values()) {
            injected.put(k, new AtomicInteger());
        }
    }

    /**
     * @param kind {@code artemis} (default) or {@code rabbitmq}; see {@link HarnessBroker}
     * @return this
     */
    public ReliabilityHarness broker(String kind) {
        this.brokerKind = kind;
        return this;
    }

    /**
     * Switches sampling on (for {@link Soak}): every consumer appends its own figures to
     * {@code samples-<incarnation>.csv} every {@code period} ({@link ConsumerSampler}), and the harness writes
     * {@code driver-samples.csv} (effect rows, store rows, queue depth) and {@code faults.csv} (each timed fault with
     * the effect rows when it was injected) into the work directory.
     *
     * @param period the sampling period
     * @return this
     */
    public ReliabilityHarness sampling(Duration period) {
        this.sampleMs = period.toMillis();
        return this;
    }

    /** @return the work directory (logs, samples, result) */
    public Path workDir() {
        return workDir;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        int messages = Integer.parseInt(o.getOrDefault("messages", "2000"));
        Config c = Config.defaults(messages);
        c = c.withConsumers(Integer.parseInt(o.getOrDefault("consumers", "3")))
                .withFaults(FaultKind.parse(o.getOrDefault("faults", "all")),
                        Integer.parseInt(o.getOrDefault("repeats", String.valueOf(c.repeats()))))
                .withMode(o.getOrDefault("mode", "separate"))
                .withDatabase(o.getOrDefault("database", "postgresql"))
                .withSeed(Long.parseLong(o.getOrDefault("seed", "42")))
                .withHandlerDelayMs(Long.parseLong(o.getOrDefault("handler-delay-ms", "0")))
                .withLeaseMs(Long.parseLong(o.getOrDefault("lease-ms", "3000")))
                .withTimeout(Duration.ofSeconds(Long.parseLong(o.getOrDefault("timeout-s",
                        String.valueOf(Math.max(300, messages / 100))))));
        if (o.containsKey("work-dir")) {
            c = c.withWorkDir(Path.of(o.get("work-dir")));
        }
        Result result = new ReliabilityHarness(c).broker(o.getOrDefault("broker", "artemis")).run();
        System.out.println();
        System.out.println(result.table());
        System.out.println(result.violations().isEmpty() ? "RESULT: PASS" : "RESULT: FAIL " + result.violations());
        System.exit(result.violations().isEmpty() ? 0 : 1);
    }

    // ------------------------------------------------------------------------------------------------ run

    /** Runs the whole scenario and returns the checker's result. Everything it started is stopped. */
    public Result run() throws Exception {
        if (!config.mode().equals("separate") && !config.mode().equals("transactional")) {
            throw new IllegalArgumentException("--mode must be separate or transactional, was " + config.mode());
        }
        Workload workload = Workload.plan(config, random);
        note("work dir " + workDir + "; " + workload.describe());
        try {
            postgres = (config.database().equals("mariadb")
                    ? new ManagedMariaDb(workDir.resolve("mariadb"), freePort())
                    : new ManagedPostgres(workDir.resolve("pgdata"), freePort())).start();
            proxy = new TcpProxy(postgres.port());
            db = HarnessConsumer.pool(postgres.jdbcUrl(postgres.port()), postgres.user(), "harness", 4);
            HarnessDb.createSchema(db);
            org.acemq.amqp.store.jdbc.JdbcIdempotencyStore.builder(db).tableName(HarnessDb.STORE_TABLE).build()
                    .createSchema();
            note(postgres.product() + " on port " + postgres.port() + ", consumers reach it through proxy port " + proxy.port());
            // RabbitMQ: a queue of this run's own, covered by the dead-letter policy (the key scope stays QUEUE)
            broker = HarnessBroker.start(brokerKind, workDir, brokerKind.equals("artemis") ? QUEUE
                    : "interop.soak." + Long.toHexString(System.nanoTime()));
            note("broker " + broker + ", address " + broker.queueAddress());
            for (int i = 1; i <= config.consumers(); i++) {
                String crashSpec = workload.crashSpec();
                ConsumerProcess slot = new ConsumerProcess("c" + i, workDir, id -> consumerProgram(id, crashSpec),
                        this::note, () -> stopping, deadIncarnations::add);
                slots.add(slot);
                slot.start();
            }
            awaitCondition("consumers started", Duration.ofSeconds(60), () -> slots.stream().allMatch(s -> s.started));
            Thread resumer = new Thread(this::resumeSelfPaused, "self-pause-resumer");
            resumer.setDaemon(true);
            resumer.start();
            note("consumers started");
            if (sampleMs > 0) {
                Thread sampler = new Thread(this::sampleLoop, "driver-sampler");
                sampler.setDaemon(true);
                sampler.start();
            }

            List<FaultKind> timedFaults = workload.timedFaults();
            List<List<AmqpTestClient.MessageSpec>> waves = workload.waves(timedFaults.size() + 1);
            int expectedSoFar = 0;
            Set<String> counted = new HashSet<>();
            for (int w = 0; w < waves.size(); w++) {
                List<AmqpTestClient.MessageSpec> wave = waves.get(w);
                publish(wave);
                int waveUnique = workload.newNonPoison(wave, counted);
                int base = expectedSoFar;
                expectedSoFar += waveUnique;
                if (w < timedFaults.size()) {
                    FaultKind fault = timedFaults.get(w);
                    int trigger = base + Math.max(1, (int) (waveUnique * (0.2 + 0.4 * random.nextDouble())));
                    awaitCondition("progress " + trigger + " before " + fault.label(), Duration.ofSeconds(60),
                            () -> effectRows() >= trigger);
                    inject(fault);
                }
            }
            note("published everything: " + published + " sends (" + publishRetries + " batch retries)");

            int expected = workload.nonPoisonIds().size();
            int poisonCount = workload.poisonIds().size();
            // every poison message dead-lettered; or, where the broker may drop dead letters (RabbitMQ 3), every one
            // rejected by a consumer (with the queue empty, the broker took each rejection: the checker tells them)
            boolean complete = awaitStable(config.timeout(), () -> !selfPaused && effectRows() >= expected
                    && (broker.deadLettered() >= poisonCount
                        || broker.deadLettersAtMostOnce() && rejectedKeys() >= poisonCount)
                    && broker.queued() == 0 && broker.delivering() == 0 && distinctEffects() >= expected);
            note(complete ? "workload complete" : "TIMED OUT waiting for the workload to complete");
            long queuedBeforeStop = broker.queued();
            long deliveringBeforeStop = broker.delivering();
            stopping = true;
            ConsumerProcess.stopAll(slots);
            // whatever the consumers left unsettled is back in the queue now
            Thread.sleep(500);
            long queuedAfterStop = broker.queued();
            List<AmqpTestClient.ReceivedMessage> dead = broker.drainDeadLetters();
            note("DLQ message annotations (first): " + (dead.isEmpty() ? "none" : dead.get(0).annotations()));
            Result result = Checker.check(config, workload, db, dead, broker.deadLettersAtMostOnce(), queuedBeforeStop,
                    deliveringBeforeStop,
                    queuedAfterStop, injectedCounts(), deadIncarnations, published, publishRetries,
                    Duration.ofNanos(System.nanoTime() - startNanos), complete);
            note("done: " + (result.violations().isEmpty() ? "PASS" : "FAIL " + result.violations()));
            Files.write(workDir.resolve("harness.log"), new ArrayList<>(log));
            Files.writeString(workDir.resolve("result.txt"), result.table());
            return result;
        } finally {
            stopping = true;
            for (ConsumerProcess s : slots) {
                s.kill();
            }
            if (db != null) {
                db.close();
            }
            if (broker != null) {
                broker.close();
            }
            if (proxy != null) {
                proxy.close();
            }
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    private Map<FaultKind, Integer> injectedCounts() {
        Map<FaultKind, Integer> counts = new EnumMap<>(FaultKind.class);
        for (FaultKind k : FaultKind.values()) {
            counts.put(k, injected.get(k).get());
        }
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT point, count(*) FROM " + HarnessDb.SCHEMA
                     + ".harness_crashes GROUP BY point")) {
            while (rs.next()) {
                CrashPoint p = CrashPoint.parse(rs.getString(1));
                for (FaultKind k : FaultKind.values()) {
                    if (k.crashPoint == p) {
                        counts.put(k, rs.getInt(2));
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return counts;
    }

    // ------------------------------------------------------------------------------------------------ faults

    private void inject(FaultKind fault) throws Exception {
        long before = effectRows();
        note("inject " + fault.label() + " at progress " + before);
        if (sampleMs > 0) {
            appendLine("faults.csv", System.currentTimeMillis() + "," + before + "," + fault.label());
        }
        switch (fault) {
            case KILL9 -> {
                ConsumerProcess slot = slots.get(random.nextInt(slots.size()));
                slot.kill9();
            }
            case PAUSE -> {
                ConsumerProcess slot = slots.get(random.nextInt(slots.size()));
                long pauseMs = config.leaseMs() * 2;
                slot.pausedByHarness = true;
                slot.signal("STOP");
                Thread.sleep(pauseMs);
                slot.signal("CONT");
                slot.pausedByHarness = false;
                note("resumed " + slot.currentId + " after " + pauseMs + " ms");
            }
            case BROKER_DROP -> note("dropped " + broker.cutConnections() + " broker connections");
            case BROKER_RESTART -> restartBroker();
            case PG_RESTART -> {
                postgres.restart();
                note(postgres.product() + " restarted");
            }
            case PG_UNREACHABLE -> {
                proxy.block();
                Thread.sleep(3_000);
                proxy.unblock();
                note(postgres.product() + " reachable again");
            }
            default -> throw new IllegalArgumentException(fault + " is not a timed fault");
        }
        injected.get(fault).incrementAndGet();
        // recovery: progress resumes (or there was nothing left to do)
        awaitCondition("progress after " + fault.label(), Duration.ofSeconds(60),
                () -> effectRows() > before || broker.queued() == 0);
    }

    /** Restarts the broker on the same port with its data (see {@link HarnessBroker#restart()}). */
    private void restartBroker() {
        broker.restart();
        note("broker restarted");
    }

    /** Sends SIGCONT, after twice the lease, to a consumer that stopped itself (pause-mid-handler). */
    private void resumeSelfPaused() {
        while (!stopping) {
            for (ConsumerProcess slot : slots) {
                Process p = slot.process;
                if (slot.pausedByHarness || p == null || !p.isAlive()) {
                    continue;
                }
                try {
                    String stat = Files.readString(Path.of("/proc", String.valueOf(p.pid()), "stat"));
                    char state = stat.charAt(stat.lastIndexOf(')') + 2);
                    if (state == 'T') {
                        selfPaused = true;
                        note("consumer " + slot.currentId + " stopped itself; SIGCONT in " + 2 * config.leaseMs()
                                + " ms");
                        Thread.sleep(2 * config.leaseMs());
                        slot.signal("CONT");
                        Thread.sleep(1_000); // let it finish the paused delivery before the end can be declared
                        selfPaused = false;
                    }
                } catch (IOException | RuntimeException e) {
                    // the process just exited
                } catch (InterruptedException e) {
                    return;
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ publishing

    private void publish(List<AmqpTestClient.MessageSpec> messages) throws InterruptedException {
        int chunk = 500;
        for (int from = 0; from < messages.size(); from += chunk) {
            List<AmqpTestClient.MessageSpec> part = messages.subList(from, Math.min(messages.size(), from + chunk));
            for (int attempt = 1; ; attempt++) {
                try (AmqpTestClient client = broker.client()) {
                    client.send(broker.queueAddress(), part);
                    published += part.size();
                    break;
                } catch (RuntimeException e) {
                    // a publisher retry: some of the part may have arrived already, so this sends duplicates
                    publishRetries++;
                    published += part.size();
                    note("publish retry " + attempt + ": " + e.getMessage());
                    if (attempt > 20) {
                        throw e;
                    }
                    Thread.sleep(250);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ observation

    private long distinctEffects() {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(DISTINCT msg_key) FROM " + HarnessDb.SCHEMA
                     + ".harness_effects")) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1; // PostgreSQL is restarting
        }
    }

    /** @return distinct keys a consumer recorded a rejected settlement for, or -1 while PostgreSQL is unreachable */
    private long rejectedKeys() {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(DISTINCT msg_key) FROM " + HarnessDb.SCHEMA
                     + ".harness_rejections")) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1;
        }
    }

    /**
     * @return effect rows written so far (the effects table's sequence: cheap on a large table, unlike a count; it
     *     also counts duplicate effects and, in transactional mode, inserts rolled back), or -1 while PostgreSQL is
     *     unreachable
     */
    long effectRows() {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT coalesce(max(seq), 0) FROM " + HarnessDb.SCHEMA
                     + ".harness_effects")) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1;
        }
    }

    /** @return rows in the idempotency store's table, or -1 while PostgreSQL is unreachable */
    long storeRows() {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM " + HarnessDb.STORE_TABLE)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1;
        }
    }

    /** Appends a line to a file in the work directory as it happens, so that a run cut short keeps its samples. */
    private synchronized void appendLine(String file, String line) {
        try {
            Files.writeString(workDir.resolve(file), line + "\n", java.nio.charset.StandardCharsets.UTF_8,
                    java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            note("cannot write " + file + ": " + e);
        }
    }

    /** The driver's samples: {@code epoch ms, effect rows, store rows, queued} every sampling period. */
    private void sampleLoop() {
        while (!stopping) {
            long effects = effectRows();
            long rows = storeRows();
            long queued = broker.queued();
            if (effects >= 0 && rows >= 0) {
                appendLine("driver-samples.csv", System.currentTimeMillis() + "," + effects + "," + rows + ","
                        + (queued == Long.MAX_VALUE ? -1 : queued));
            }
            try {
                Thread.sleep(sampleMs);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private void awaitCondition(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                note("gave up waiting for " + what + " after " + timeout.toSeconds() + " s");
                return;
            }
            Thread.sleep(100);
        }
    }

    /** Waits until the condition holds on two checks 1 s apart. */
    private boolean awaitStable(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long lastNote = System.nanoTime();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                Thread.sleep(1_000);
                if (condition.getAsBoolean()) {
                    return true;
                }
            }
            if (System.nanoTime() - lastNote > Duration.ofSeconds(10).toNanos()) {
                lastNote = System.nanoTime();
                note("waiting: effect rows " + effectRows() + ", queue " + broker.queued() + " (delivering "
                        + broker.delivering() + "), DLQ " + broker.deadLettered());
            }
            Thread.sleep(250);
        }
        return false;
    }

    void note(String line) {
        String s = String.format(Locale.ROOT, "[%7.1fs] %s", (System.nanoTime() - startNanos) / 1e9, line);
        log.add(s);
        System.out.println("HARNESS " + s);
        System.out.flush();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    // ------------------------------------------------------------------------------------------------ consumers

    /** @return the main class and arguments of consumer incarnation {@code id} ({@link HarnessConsumer}) */
    private List<String> consumerProgram(String id, String crashSpec) {
        List<String> cmd = new ArrayList<>(List.of(
                HarnessConsumer.class.getName(),
                "--id", id,
                "--broker-host", broker.host(),
                "--broker-port", String.valueOf(broker.consumerPort()),
                "--address", broker.queueAddress(),
                "--jdbc-url", postgres.jdbcUrl(proxy.port()),
                "--user", postgres.user(),
                "--queue", QUEUE,
                "--mode", config.mode(),
                "--lease-ms", String.valueOf(config.leaseMs()),
                "--handler-delay-ms", String.valueOf(config.handlerDelayMs()),
                "--max-attempts", String.valueOf(MAX_ATTEMPTS)));
        if (broker.user() != null) {
            cmd.addAll(List.of("--amqp-user", broker.user(), "--amqp-password", broker.password()));
        }
        if (sampleMs > 0) {
            cmd.addAll(List.of("--sample-ms", String.valueOf(sampleMs), "--sample-file",
                    workDir.resolve("samples-" + id + ".csv").toString()));
        }
        if (!crashSpec.isEmpty()) {
            cmd.add("--crash");
            cmd.add(crashSpec);
        }
        return cmd;
    }

    // ------------------------------------------------------------------------------------------------ workload

    /** Which messages exist, what each does, and where crashes are armed. */
    static final class Workload {
        final List<String> ids = new ArrayList<>();
        final Map<String, String> kinds = new HashMap<>();
        final Set<String> duplicated = new HashSet<>();
        final Map<CrashPoint, List<String>> crashes = new EnumMap<>(CrashPoint.class);
        final List<FaultKind> timedFaults = new ArrayList<>();

        static Workload plan(Config c, Random random) {
            Workload w = new Workload();
            for (int i = 0; i < c.messages(); i++) {
                String id = String.format(Locale.ROOT, "order-%07d", i);
                w.ids.add(id);
                w.kinds.put(id, "normal");
            }
            List<String> shuffled = new ArrayList<>(w.ids);
            Collections.shuffle(shuffled, random);
            int next = 0;
            for (int i = 0; i < c.poison(); i++) {
                w.kinds.put(shuffled.get(next++), i % 2 == 0 ? "poison-permanent" : "poison-transient");
            }
            int transients = (int) Math.round(c.messages() * c.transientRatio());
            for (int i = 0; i < transients; i++) {
                w.kinds.put(shuffled.get(next++), "transient");
            }
            // crash keys: normal messages from the first 70 % (by publication order), so that the crashes happen
            // while the workload runs and their recovery is part of it
            int early = Math.max(1, c.messages() * 7 / 10);
            for (FaultKind k : c.faults()) {
                if (!k.timed()) {
                    List<String> keys = new ArrayList<>();
                    // at least two keys per point: a key met while PostgreSQL is down cannot record its crash and
                    // does not fire, and the run must still see every crash point at least once
                    for (int r = 0; r < Math.max(2, c.repeats()); r++) {
                        while (Integer.parseInt(shuffled.get(next).substring(6)) >= early) {
                            next++;
                        }
                        keys.add(shuffled.get(next++)); // normal messages only
                    }
                    w.crashes.put(k.crashPoint, keys);
                }
            }
            int duplicates = (int) Math.round(c.messages() * c.duplicateRatio());
            for (int i = 0; i < duplicates; i++) {
                String id = shuffled.get(next + random.nextInt(shuffled.size() - next));
                w.duplicated.add(id);
            }
            for (int r = 0; r < c.repeats(); r++) {
                for (FaultKind k : c.faults()) {
                    if (k.timed()) {
                        w.timedFaults.add(k);
                    }
                }
            }
            return w;
        }

        List<FaultKind> timedFaults() {
            return timedFaults;
        }

        /** Keys as the runtime sees them (see {@link #key}), per crash point, for the consumers' --crash option. */
        String crashSpec() {
            List<String> items = new ArrayList<>();
            crashes.forEach((p, ids) -> ids.forEach(id -> items.add(p.label() + ":" + key(id))));
            return String.join(",", items);
        }

        /**
         * Splits the messages into {@code n} waves in id order; duplicates of a wave's messages are re-published
         * in the next wave (the last wave's at its end).
         */
        List<List<AmqpTestClient.MessageSpec>> waves(int n) {
            List<List<AmqpTestClient.MessageSpec>> waves = new ArrayList<>();
            List<String> carry = new ArrayList<>();
            for (int w = 0; w < n; w++) {
                List<AmqpTestClient.MessageSpec> wave = new ArrayList<>();
                for (String id : carry) {
                    wave.add(spec(id));
                }
                carry = new ArrayList<>();
                int from = (int) ((long) ids.size() * w / n);
                int to = (int) ((long) ids.size() * (w + 1) / n);
                for (String id : ids.subList(from, to)) {
                    wave.add(spec(id));
                    if (duplicated.contains(id)) {
                        carry.add(id);
                    }
                }
                if (w == n - 1) {
                    for (String id : carry) {
                        wave.add(spec(id));
                    }
                }
                waves.add(wave);
            }
            return waves;
        }

        /** @return how many non-poison ids of {@code wave} are not in {@code counted} yet (and adds them) */
        int newNonPoison(List<AmqpTestClient.MessageSpec> wave, Set<String> counted) {
            int n = 0;
            for (AmqpTestClient.MessageSpec m : wave) {
                String id = (String) m.messageId();
                if (!kinds.get(id).startsWith("poison") && counted.add(id)) {
                    n++;
                }
            }
            return n;
        }

        private AmqpTestClient.MessageSpec spec(String id) {
            return AmqpTestClient.message(id, "{\"order\":\"" + id + "\"}").property("kind", kinds.get(id))
                    .durable(true);
        }

        Set<String> poisonIds() {
            Set<String> s = new HashSet<>();
            kinds.forEach((id, k) -> {
                if (k.startsWith("poison")) {
                    s.add(id);
                }
            });
            return s;
        }

        Set<String> nonPoisonIds() {
            Set<String> s = new HashSet<>(ids);
            s.removeAll(poisonIds());
            return s;
        }

        String describe() {
            Map<String, Integer> counts = new LinkedHashMap<>();
            kinds.values().forEach(k -> counts.merge(k, 1, Integer::sum));
            return ids.size() + " unique messages " + counts + ", " + duplicated.size() + " re-published, crash keys "
                    + crashes + ", timed faults " + timedFaults;
        }
    }

    static String since(Instant t) {
        return Duration.between(t, Instant.now()).toMillis() + " ms";
    }
}

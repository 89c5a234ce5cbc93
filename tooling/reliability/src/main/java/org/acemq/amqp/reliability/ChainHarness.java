package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

import com.zaxxer.hikari.HikariDataSource;

import org.acemq.amqp.samples.twoservices.CommandPlan;
import org.acemq.amqp.samples.twoservices.Ledger;
import org.acemq.amqp.samples.twoservices.OrderService;
import org.acemq.amqp.samples.twoservices.ShippingService;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/**
 * The chain test: the two-services sample ({@link OrderService}, {@link ShippingService}) on a real broker and a real
 * PostgreSQL, two consumer JVMs per service ({@link ChainConsumer}), while a publisher sends {@code PlaceOrder}
 * commands with duplicates and retries under new message-ids and the harness kills both services' processes with
 * SIGKILL at random moments and restarts the broker once. At the end {@link Ledger} reads both services' tables: every
 * order must have exactly one row in the order service's table, exactly one event in its outbox, dispatched, and
 * exactly one row in the shipping service's table, carrying that event's id.
 *
 * <p>Faults, besides the copies the publisher makes:
 * <ul>
 *   <li>{@code kills} timed SIGKILLs ({@link ConsumerProcess#kill9()}), alternating between the services, each of a
 *       random process of that service, each at a random point of a wave (when 20 to 60 % of its orders reached the
 *       killed service's table); a killed process is started again as a new incarnation;</li>
 *   <li>one broker restart (persistent journal, same port), in the middle of the sequence;</li>
 *   <li>{@link CrashPoint#AFTER_COMMIT} armed on {@code crashesPerService} orders per service (from the first 70 % of
 *       the plan): the process that commits the order's transaction sends itself SIGKILL before it dispatches the
 *       event or settles the message. In the order service this leaves a committed order whose event waits in the
 *       outbox, which is the case the outbox exists for.</li>
 * </ul>
 * Nothing relies on a periodic outbox sweep: an event left pending by a crash goes out when the broker redelivers the
 * command, whose copy the store knows as confirmed and which dispatches the pending event before it is accepted.
 *
 * <pre>
 * java -cp tooling/reliability/target/classes:$(cat tooling/reliability/target/classpath.txt) \
 *     org.acemq.amqp.reliability.ChainHarness --orders 5000 --kills 10 --work-dir /tmp/acemq-chain
 * </pre>
 *
 * Options: {@code --orders N} (default 1000), {@code --consumers N} per service (2), {@code --kills N} (6),
 * {@code --crashes N} per service (2), {@code --seed N}, {@code --lease-ms N} (3000), {@code --timeout-s N},
 * {@code --work-dir DIR}. Exit code 0 when every check passes. See docs/reliability.md, "The chain test".
 */
public final class ChainHarness {

    static final String COMMANDS = "place-order";
    static final String EVENTS = "order-accepted";
    static final String ORDER_SCHEMA = OrderService.DEFAULT_SCHEMA;
    static final String SHIPPING_SCHEMA = ShippingService.DEFAULT_SCHEMA;

    /** What to run. */
    public record Config(int orders, int consumersPerService, int kills, int crashesPerService, long seed,
            long leaseMs, Duration timeout, Path workDir, double duplicates, double newIdRetries) {

        /** The CI-sized defaults for {@code orders} orders: 2 JVMs per service, 6 kills, 2 crash points each. */
        public static Config defaults(int orders) {
            return new Config(orders, 2, 6, 2, 42L, 3_000, Duration.ofMinutes(4), null, 0.05, 0.03);
        }

        public Config withWorkDir(Path dir) {
            return new Config(orders, consumersPerService, kills, crashesPerService, seed, leaseMs, timeout, dir,
                    duplicates, newIdRetries);
        }

        public Config withKills(int k) {
            return new Config(orders, consumersPerService, k, crashesPerService, seed, leaseMs, timeout, workDir,
                    duplicates, newIdRetries);
        }

        public Config withCrashesPerService(int c) {
            return new Config(orders, consumersPerService, kills, c, seed, leaseMs, timeout, workDir, duplicates,
                    newIdRetries);
        }

        public Config withConsumersPerService(int c) {
            return new Config(orders, c, kills, crashesPerService, seed, leaseMs, timeout, workDir, duplicates,
                    newIdRetries);
        }

        public Config withSeed(long s) {
            return new Config(orders, consumersPerService, kills, crashesPerService, s, leaseMs, timeout, workDir,
                    duplicates, newIdRetries);
        }

        public Config withLeaseMs(long ms) {
            return new Config(orders, consumersPerService, kills, crashesPerService, seed, ms, timeout, workDir,
                    duplicates, newIdRetries);
        }

        public Config withTimeout(Duration t) {
            return new Config(orders, consumersPerService, kills, crashesPerService, seed, leaseMs, t, workDir,
                    duplicates, newIdRetries);
        }
    }

    /** A timed fault: a SIGKILL of one service's process, or the broker's restart. */
    private enum Fault { KILL_ORDERS, KILL_SHIPPING, BROKER_RESTART }

    private final Config config;
    private final Random random;
    private final Path workDir;
    private final long startNanos = System.nanoTime();
    private final List<String> log = Collections.synchronizedList(new ArrayList<>());
    private final Set<String> deadIncarnations = ConcurrentHashMap.newKeySet();
    private final Map<Fault, Integer> injected = new HashMap<>();
    private final List<ConsumerProcess> orderProcesses = new ArrayList<>();
    private final List<ConsumerProcess> shippingProcesses = new ArrayList<>();
    private volatile boolean stopping;
    private ManagedPostgres postgres;
    private EmbeddedArtemis broker;
    private HikariDataSource db;
    private int published;
    private int publishRetries;

    public ChainHarness(Config config) {
        this.config = config;
        this.random = new Random(config.seed());
        try {
            this.workDir = config.workDir() != null ? Files.createDirectories(config.workDir())
                    : Files.createTempDirectory("acemq-chain-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        int orders = Integer.parseInt(o.getOrDefault("orders", "1000"));
        Config c = Config.defaults(orders)
                .withConsumersPerService(Integer.parseInt(o.getOrDefault("consumers", "2")))
                .withKills(Integer.parseInt(o.getOrDefault("kills", "6")))
                .withCrashesPerService(Integer.parseInt(o.getOrDefault("crashes", "2")))
                .withSeed(Long.parseLong(o.getOrDefault("seed", "42")))
                .withLeaseMs(Long.parseLong(o.getOrDefault("lease-ms", "3000")))
                .withTimeout(Duration.ofSeconds(Long.parseLong(o.getOrDefault("timeout-s",
                        String.valueOf(Math.max(240, orders / 20))))));
        if (o.containsKey("work-dir")) {
            c = c.withWorkDir(Path.of(o.get("work-dir")));
        }
        ChainResult result = new ChainHarness(c).run();
        System.out.println();
        System.out.println(result.table());
        System.out.println(result.violations().isEmpty() ? "RESULT: PASS" : "RESULT: FAIL " + result.violations());
        System.exit(result.violations().isEmpty() ? 0 : 1);
    }

    /** @return the work directory (logs, result) */
    public Path workDir() {
        return workDir;
    }

    /** Runs the whole scenario and returns what the checks found. Everything it started is stopped. */
    public ChainResult run() throws Exception {
        CommandPlan plan = CommandPlan.create("s" + config.seed(), config.orders(), config.duplicates(),
                config.newIdRetries(), config.seed());
        List<String> early = new ArrayList<>();
        for (int n = 0; n < Math.max(1, plan.orders() * 7 / 10); n++) {
            early.add(plan.orderId(n));
        }
        Collections.shuffle(early, random);
        int split = Math.min(early.size(), config.crashesPerService());
        List<String> crashOrders = early.subList(0, split);
        List<String> crashShipping = early.subList(split, Math.min(early.size(), 2 * config.crashesPerService()));
        List<Fault> faults = timedFaults();
        note("work dir " + workDir + "; " + plan.orders() + " orders, " + plan.duplicates() + " duplicates, "
                + plan.newIdRetries() + " retries under new ids; after-commit crashes: orders " + crashOrders
                + ", shipping " + crashShipping + "; timed faults " + faults);
        try {
            postgres = new ManagedPostgres(workDir.resolve("pgdata"), ReliabilityHarness.freePort()).start();
            String url = postgres.jdbcUrl(postgres.port());
            db = HarnessConsumer.pool(url, postgres.user(), "harness", 4);
            HarnessDb.createSchema(db);
            execute("CREATE TABLE " + HarnessDb.SCHEMA + ".chain_copies (service text NOT NULL, msg_key text NOT NULL,"
                    + " consumer text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())");
            String outboxTable = OrderService.store(db, ORDER_SCHEMA).build().outboxTableName();
            OrderService.createSchema(db, OrderService.store(db, ORDER_SCHEMA).build(), ORDER_SCHEMA);
            ShippingService.createSchema(db, ShippingService.store(db, SHIPPING_SCHEMA).build(), SHIPPING_SCHEMA);
            note("PostgreSQL on port " + postgres.port());
            broker = EmbeddedArtemis.builder()
                    .persistent(true)
                    .dataDirectory(workDir.resolve("broker"))
                    .maxDeliveryAttempts(-1) // the runtime decides what is poison
                    .redeliveryDelay(Duration.ZERO)
                    .acceptorParameters("amqpIdleTimeout=2000")
                    .build().start();
            try (AmqpTestClient admin = AmqpTestClient.connect(broker)) {
                admin.drain(COMMANDS); // creates the queues
                admin.drain(EVENTS);
            }
            note("broker " + broker);
            for (int i = 1; i <= config.consumersPerService(); i++) {
                orderProcesses.add(process("a" + i, "orders", url, crashOrders));
                shippingProcesses.add(process("b" + i, "shipping", url, crashShipping));
            }
            for (ConsumerProcess p : processes().toList()) {
                p.start();
            }
            awaitCondition("consumers started", Duration.ofSeconds(90),
                    () -> processes().allMatch(p -> p.started));
            note("consumers started");

            List<List<CommandPlan.Command>> waves = waves(plan.commands(), faults.size() + 1);
            int ordersSoFar = 0;
            for (int w = 0; w < waves.size(); w++) {
                List<CommandPlan.Command> wave = waves.get(w);
                publish(wave);
                int newOrders = (int) wave.stream().filter(c -> c.kind() == CommandPlan.Kind.ORIGINAL).count();
                int base = ordersSoFar;
                ordersSoFar += newOrders;
                if (w < faults.size()) {
                    Fault fault = faults.get(w);
                    LongSupplier progress = fault == Fault.KILL_SHIPPING ? this::shipmentRows : this::orderRows;
                    long trigger = base + Math.max(1, (long) (newOrders * (0.2 + 0.4 * random.nextDouble())));
                    awaitCondition("progress " + trigger + " before " + fault, Duration.ofSeconds(90),
                            () -> progress.getAsLong() >= trigger);
                    inject(fault);
                }
            }
            note("published everything: " + published + " sends (" + publishRetries + " batch retries)");

            boolean complete = awaitStable(config.timeout(), () -> {
                Ledger l = ledger(plan, outboxTable);
                return l != null && l.rowsInShipments() >= plan.orders() && l.eventsPending() == 0
                        && queued(COMMANDS) == 0 && delivering(COMMANDS) == 0
                        && queued(EVENTS) == 0 && delivering(EVENTS) == 0;
            });
            note(complete ? "chain complete" : "TIMED OUT waiting for every order to be shipped");
            stopping = true;
            ConsumerProcess.stopAll(processes().toList());
            Thread.sleep(500); // whatever the consumers left unsettled is back in its queue now
            long queuedAfterStop = broker.messageCount(COMMANDS) + broker.messageCount(EVENTS);
            long deadLettered = broker.messageCount(EmbeddedArtemis.deadLetterQueueName(COMMANDS))
                    + broker.messageCount(EmbeddedArtemis.deadLetterQueueName(EVENTS));
            Ledger ledger = Ledger.read(db, plan, ORDER_SCHEMA, outboxTable, SHIPPING_SCHEMA);
            ChainResult result = new ChainResult(config, plan, published, publishRetries, ledger,
                    count("SELECT count(*) FROM " + HarnessDb.SCHEMA + ".chain_copies WHERE service = 'orders'"),
                    count("SELECT count(*) FROM " + HarnessDb.SCHEMA + ".chain_copies WHERE service = 'shipping'"),
                    logLines("a", "a copy of"), logLines("a", "stays in the outbox"),
                    injected.getOrDefault(Fault.KILL_ORDERS, 0), injected.getOrDefault(Fault.KILL_SHIPPING, 0),
                    (int) count("SELECT count(*) FROM " + HarnessDb.SCHEMA + ".harness_crashes WHERE consumer LIKE 'a%'"),
                    (int) count("SELECT count(*) FROM " + HarnessDb.SCHEMA + ".harness_crashes WHERE consumer LIKE 'b%'"),
                    injected.getOrDefault(Fault.BROKER_RESTART, 0), new HashSet<>(deadIncarnations),
                    count("SELECT count(*) FROM " + HarnessDb.SCHEMA + ".harness_rejections"), queuedAfterStop,
                    deadLettered, complete, Duration.ofNanos(System.nanoTime() - startNanos));
            note("done: " + (result.violations().isEmpty() ? "PASS" : "FAIL " + result.violations()));
            Files.write(workDir.resolve("harness.log"), new ArrayList<>(log));
            Files.writeString(workDir.resolve("result.txt"), result.table());
            return result;
        } finally {
            stopping = true;
            processes().forEach(ConsumerProcess::kill);
            if (db != null) {
                db.close();
            }
            if (broker != null) {
                broker.close();
            }
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    /** The timed faults in order: kills alternating between the services, the broker's restart in the middle. */
    private List<Fault> timedFaults() {
        List<Fault> faults = new ArrayList<>();
        for (int k = 0; k < config.kills(); k++) {
            faults.add(k % 2 == 0 ? Fault.KILL_ORDERS : Fault.KILL_SHIPPING);
        }
        faults.add(faults.size() / 2, Fault.BROKER_RESTART);
        return faults;
    }

    private Stream<ConsumerProcess> processes() {
        return Stream.concat(orderProcesses.stream(), shippingProcesses.stream());
    }

    private ConsumerProcess process(String name, String service, String url, List<String> crashAt) {
        String crashSpec = String.join(",", crashAt.stream().map(id -> CrashPoint.AFTER_COMMIT.label() + ":" + id)
                .toList());
        return new ConsumerProcess(name, workDir, id -> {
            List<String> cmd = new ArrayList<>(List.of(ChainConsumer.class.getName(),
                    "--service", service, "--id", id,
                    "--broker-host", broker.host(), "--broker-port", String.valueOf(broker.port()),
                    "--jdbc-url", url, "--user", postgres.user(),
                    "--lease-ms", String.valueOf(config.leaseMs())));
            if (!crashSpec.isEmpty()) {
                cmd.addAll(List.of("--crash", crashSpec));
            }
            return cmd;
        }, this::note, () -> stopping, deadIncarnations::add);
    }

    private void inject(Fault fault) throws InterruptedException {
        long orders = orderRows();
        long shipments = shipmentRows();
        note("inject " + fault + " at " + orders + " order rows, " + shipments + " shipment rows");
        switch (fault) {
            case KILL_ORDERS -> orderProcesses.get(random.nextInt(orderProcesses.size())).kill9();
            case KILL_SHIPPING -> shippingProcesses.get(random.nextInt(shippingProcesses.size())).kill9();
            case BROKER_RESTART -> {
                broker.restart(); // pauses the acceptor and drops every connection first (Artemis stop deadlock)
                note("broker restarted");
            }
            default -> throw new IllegalArgumentException(String.valueOf(fault));
        }
        injected.merge(fault, 1, Integer::sum);
        awaitCondition("progress after " + fault, Duration.ofSeconds(90),
                () -> orderRows() > orders || shipmentRows() > shipments);
    }

    /** Splits the commands into {@code n} waves in publishing order. */
    private static List<List<CommandPlan.Command>> waves(List<CommandPlan.Command> commands, int n) {
        List<List<CommandPlan.Command>> waves = new ArrayList<>();
        for (int w = 0; w < n; w++) {
            waves.add(commands.subList((int) ((long) commands.size() * w / n),
                    (int) ((long) commands.size() * (w + 1) / n)));
        }
        return waves;
    }

    /** Sends in parts of 200; a part that fails is sent again in full, as a publisher retries (more duplicates). */
    private void publish(List<CommandPlan.Command> commands) throws InterruptedException {
        int chunk = 200;
        for (int from = 0; from < commands.size(); from += chunk) {
            List<AmqpTestClient.MessageSpec> part = new ArrayList<>();
            for (CommandPlan.Command c : commands.subList(from, Math.min(commands.size(), from + chunk))) {
                AmqpTestClient.MessageSpec spec = AmqpTestClient.message(c.messageId(), c.body()).durable(true);
                c.properties().forEach(spec::property);
                part.add(spec);
            }
            for (int attempt = 1; ; attempt++) {
                try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port())) {
                    client.send(COMMANDS, part);
                    published += part.size();
                    break;
                } catch (RuntimeException e) {
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

    private Ledger ledger(CommandPlan plan, String outboxTable) {
        try {
            return Ledger.read(db, plan, ORDER_SCHEMA, outboxTable, SHIPPING_SCHEMA);
        } catch (SQLException e) {
            return null;
        }
    }

    /** @return messages in the queue, or {@link Long#MAX_VALUE} while the broker cannot tell */
    private long queued(String queue) {
        try {
            return broker.messageCount(queue);
        } catch (RuntimeException e) {
            return Long.MAX_VALUE;
        }
    }

    /** @return deliveries of the queue not settled yet, or {@link Long#MAX_VALUE} while the broker cannot tell */
    private long delivering(String queue) {
        try {
            return broker.deliveringCount(queue);
        } catch (RuntimeException e) {
            return Long.MAX_VALUE;
        }
    }

    /** @return rows written to the order service's table so far (its sequence, rolled-back inserts included) */
    private long orderRows() {
        return count("SELECT coalesce(max(seq), 0) FROM " + ORDER_SCHEMA + ".orders");
    }

    /** @return rows written to the shipping service's table so far */
    private long shipmentRows() {
        return count("SELECT coalesce(max(seq), 0) FROM " + SHIPPING_SCHEMA + ".shipments");
    }

    private long count(String sql) {
        try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return -1;
        }
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /** @return lines containing {@code text} in the logs of the consumers whose names start with {@code prefix} */
    private long logLines(String prefix, String text) throws IOException {
        long n = 0;
        try (Stream<Path> files = Files.list(workDir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("consumer-" + prefix)).toList()) {
                try (Stream<String> lines = Files.lines(f)) {
                    n += lines.filter(l -> l.contains(text)).count();
                }
            }
        }
        return n;
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
                note("waiting: order rows " + orderRows() + ", shipment rows " + shipmentRows() + ", commands queued "
                        + queued(COMMANDS) + " (delivering " + delivering(COMMANDS) + "), events queued "
                        + queued(EVENTS) + " (delivering " + delivering(EVENTS) + ")");
            }
            Thread.sleep(250);
        }
        return false;
    }

    void note(String line) {
        String s = String.format(Locale.ROOT, "[%7.1fs] %s", (System.nanoTime() - startNanos) / 1e9, line);
        log.add(s);
        System.out.println("CHAIN " + s);
        System.out.flush();
    }
}

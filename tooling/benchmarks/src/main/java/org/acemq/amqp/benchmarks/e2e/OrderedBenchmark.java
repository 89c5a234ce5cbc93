package org.acemq.amqp.benchmarks.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;

/**
 * The ordered processing mode against the concurrent one, on the benchmark's broker (its own JVM, no journal): what
 * ordering per key costs, and what a hot key does to the other keys. {@code tooling/benchmarks/run.sh ordered}.
 *
 * <p><b>Throughput.</b> {@code keys} &times; {@code perKey} messages with {@code group-id} set, published in per-key
 * sequence and interleaved over the keys; a handler that takes a random 0 to {@code maxHandlerMicros} µs and fails
 * {@code failurePercent} % of its runs transiently; concurrency {@code concurrency}. Each round measures the same
 * messages with {@code orderBy(KeySource.groupId())} and without (alternating which goes first), and checks the
 * ordered run's effects per key against publish order. Reported: msg/s of each, and their ratio per round.
 *
 * <p><b>Hot key.</b> The other keys' traffic ({@code keys} &times; {@code hotOthersPerKey} messages) alone, ordered,
 * against the same traffic with as many messages again on one key (half of all traffic), interleaved. The other keys'
 * rate is their messages over the time until their last effect. Measured once per parked limit asked for ({@code
 * default}: the subscription's own {@code parkedLimit} and {@code parkedBytes}, set by nothing here): the hot key's
 * deliveries beyond its backlog are parked, and at the parked bound the intake stops, so the other keys then go only
 * as fast as the hot key frees parked places.
 *
 * <p>Both use the in-memory store; the broker's own delivery limit is far above the subscription's
 * {@code maxAttempts}, so no message is dead-lettered by the broker.
 */
public final class OrderedBenchmark {

    private static final String HOST = EndToEndBenchmark.HOST;
    private static final int BROKER_DELIVERY_ATTEMPTS = 1_000;

    /** Options, all with defaults. */
    static final class Options {
        int keys = 1_000;
        int perKey = 20;
        int concurrency = 16;
        int failurePercent = 10;
        int maxHandlerMicros = 5_000;
        int rounds = 3;
        int warmupPerKey = 5;
        int hotOthersPerKey = 10;
        int keyBacklog = Subscription.DEFAULT_KEY_BACKLOG;
        /** Parked limits to measure the hot key with; null: the subscription's defaults (nothing set). */
        List<Integer> parkedLimits = java.util.Collections.singletonList(null);
        String only = "throughput,hotkey";
        Path out = Path.of("tooling", "benchmarks", "target", "ordered-results.md");
        Path dataDir = Path.of("tooling", "benchmarks", "target", "bench-data");
        List<String> brokerJvm = List.of("-Xms1g", "-Xmx2g", "-XX:+UseG1GC");
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
                    case "--keys" -> o.keys = Integer.parseInt(v);
                    case "--per-key" -> o.perKey = Integer.parseInt(v);
                    case "--concurrency" -> o.concurrency = Integer.parseInt(v);
                    case "--failure-percent" -> o.failurePercent = Integer.parseInt(v);
                    case "--max-handler-micros" -> o.maxHandlerMicros = Integer.parseInt(v);
                    case "--rounds" -> o.rounds = Integer.parseInt(v);
                    case "--warmup-per-key" -> o.warmupPerKey = Integer.parseInt(v);
                    case "--hot-others-per-key" -> o.hotOthersPerKey = Integer.parseInt(v);
                    case "--key-backlog" -> o.keyBacklog = Integer.parseInt(v);
                    case "--parked-limits" -> o.parkedLimits = java.util.Arrays.stream(v.split(","))
                            .map(String::trim).map(x -> x.equals("default") ? null : Integer.valueOf(x))
                            .collect(java.util.stream.Collectors.toList());
                    case "--only" -> o.only = v;
                    case "--out" -> o.out = Path.of(v);
                    case "--data-dir" -> o.dataDir = Path.of(v);
                    case "--broker-jvm" -> o.brokerJvm = List.of(v.trim().split("\\s+"));
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            o.command = "tooling/benchmarks/run.sh ordered" + (args.length == 0 ? "" : " " + String.join(" ", args));
            return o;
        }
    }

    private final Options options;
    private final Client client = Client.create();
    private final AtomicLong sequence = new AtomicLong();
    private BenchEnv.Broker broker;

    private OrderedBenchmark(Options options) {
        this.options = options;
    }

    /**
     * @param args see {@link Options}
     * @throws Exception if the benchmark cannot run, or an ordered run broke the order
     */
    public static void main(String[] args) throws Exception {
        EndToEndBenchmark.quietLogging();
        Options o = Options.parse(args);
        String text = new OrderedBenchmark(o).run();
        BenchEnv.printAndWrite(o.out, text);
        System.exit(0);
    }

    private String run() throws Exception {
        String started = ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        String loadBefore = BenchEnv.loadAverage();
        long t0 = System.nanoTime();
        StringBuilder sb = new StringBuilder();
        try {
            broker = BenchEnv.Broker.start(false, options.brokerJvm, options.dataDir, BROKER_DELIVERY_ATTEMPTS);
            log("broker pid " + broker.handle().pid() + " port " + broker.port());
            warmUp();
            if (options.only.contains("throughput")) {
                sb.append(throughput());
            }
            if (options.only.contains("hotkey")) {
                sb.append(hotKey());
            }
        } finally {
            client.close();
            if (broker != null) {
                broker.close();
            }
        }
        String minutes = String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 60e9);
        return "## Ordered processing: throughput and hot key\n\nRun " + started + " on " + BenchEnv.machine() + ", "
                + minutes + " min, command `" + options.command + "`.\nBroker: embedded Artemis in its own JVM, no "
                + "journal (non-durable messages), delivery limit " + BROKER_DELIVERY_ATTEMPTS + ". In-memory store. "
                + "Handler: random 0-" + options.maxHandlerMicros + " µs (LockSupport.parkNanos), "
                + options.failurePercent + " % of runs fail transiently; retry back-off 5-20 ms; maxAttempts 50; "
                + "concurrency " + options.concurrency + ". Before the measurements both modes ran once on "
                + options.keys + " × " + options.warmupPerKey + " messages, not reported (warm-up).\nLoad average (1/5/15 min) at start: " + loadBefore
                + "; at the end: " + BenchEnv.loadAverage() + ".\n\n" + sb;
    }

    /** Both modes once on a smaller set, not reported: the first measurement in a JVM runs partly interpreted. */
    private void warmUp() throws Exception {
        if (options.warmupPerKey == 0) {
            return;
        }
        int n = options.keys * options.warmupPerKey;
        for (boolean ordered : new boolean[] {true, false}) {
            String queue = "ordered.warmup." + sequence.incrementAndGet();
            fill(queue, interleaved(options.keys, options.warmupPerKey, 0));
            Run run = measure(queue, ordered, null, n, key -> true);
            log(String.format(Locale.ROOT, "warm-up %s: %,.0f msg/s", ordered ? "ordered" : "unordered", run.rate(n)));
        }
    }

    // ------------------------------------------------------------------ throughput

    private String throughput() throws Exception {
        int n = options.keys * options.perKey;
        int outOfOrder = 0;
        List<double[]> rounds = new ArrayList<>();
        for (int r = 1; r <= options.rounds; r++) {
            double ordered = 0;
            double unordered = 0;
            for (boolean first : new boolean[] {r % 2 == 1, r % 2 == 0}) {
                String queue = "ordered.tp." + sequence.incrementAndGet();
                fill(queue, interleaved(options.keys, options.perKey, 0));
                Run run = measure(queue, first, null, n, key -> true);
                if (first) {
                    run.checkOrder(options.keys, options.perKey);
                    ordered = run.rate(n);
                } else {
                    unordered = run.rate(n);
                    outOfOrder = Math.max(outOfOrder, run.keysOutOfOrder(options.perKey));
                }
                log(String.format(Locale.ROOT, "round %d %s: %,.0f msg/s, %,d failures, %d ms%s", r,
                        first ? "ordered" : "unordered", run.rate(n), run.failures.get(), run.millis(),
                        first ? "" : ", " + run.keysOutOfOrder(options.perKey) + " keys out of publish order, "
                                + run.overlaps.get() + " runs beside another of their key"));
            }
            rounds.add(new double[] {ordered, unordered});
        }
        StringBuilder sb = new StringBuilder("### Ordered against unordered, same messages\n\n")
                .append(String.format(Locale.ROOT, "%,d keys × %d messages = %,d messages per measurement, %d rounds "
                        + "(ordered first in odd rounds). Ordered: every key's effects in publish order, checked.%n%n",
                        options.keys, options.perKey, n, options.rounds))
                .append("| round | ordered msg/s | unordered msg/s | ratio |\n|---:|---:|---:|---:|\n");
        List<Double> ratios = new ArrayList<>();
        for (int i = 0; i < rounds.size(); i++) {
            double[] r = rounds.get(i);
            ratios.add(r[0] / r[1]);
            sb.append(String.format(Locale.ROOT, "| %d | %,.0f | %,.0f | %.2f |%n", i + 1, r[0], r[1], r[0] / r[1]));
        }
        double median = median(ratios);
        sb.append(String.format(Locale.ROOT, "%nMedian ratio ordered / unordered: **%.2f** (target ≥ 0.80: %s). "
                + "The unordered runs had up to %,d keys whose effects were not in publish order (the same messages)."
                + "%n%n", median, median >= 0.8 ? "met" : "not met", outOfOrder));
        return sb.toString();
    }

    // ------------------------------------------------------------------ hot key

    private String hotKey() throws Exception {
        int others = options.keys * options.hotOthersPerKey;
        StringBuilder sb = new StringBuilder("### Hot key: half the traffic on one key\n\n")
                .append(String.format(Locale.ROOT, "The other keys: %,d keys × %d = %,d messages; with the hot key, "
                        + "%,d more on one key, interleaved one for one (half the traffic). Ordered, keyBacklog %d, "
                        + "default prefetch. The other keys' rate: their messages over the time to their last effect."
                        + "%n%n", options.keys, options.hotOthersPerKey, others, others, options.keyBacklog))
                .append("| parked limit | round | others alone msg/s | others beside the hot key msg/s | ratio | hot key "
                        + "msg/s meanwhile |\n|---:|---:|---:|---:|---:|---:|\n");
        for (Integer limit : options.parkedLimits) {
            String label = limit == null ? String.format(Locale.ROOT, "default (%,d / %d MiB)",
                    Subscription.DEFAULT_PARKED_LIMIT, Subscription.DEFAULT_PARKED_BYTES >> 20)
                    : String.format(Locale.ROOT, "%,d", limit);
            List<Double> ratios = new ArrayList<>();
            for (int r = 1; r <= options.rounds; r++) {
                String alone = "ordered.alone." + sequence.incrementAndGet();
                fill(alone, interleaved(options.keys, options.hotOthersPerKey, 0));
                Run a = measure(alone, true, limit, others, key -> true);
                a.checkOrder(options.keys, options.hotOthersPerKey);

                String mixed = "ordered.hot." + sequence.incrementAndGet();
                fill(mixed, interleaved(options.keys, options.hotOthersPerKey, others));
                Run m = measure(mixed, true, limit, others, key -> !key.equals("hot"));
                Integer hotDone = m.effects.containsKey("hot") ? m.effects.get("hot").size() : 0;
                m.effects.remove("hot");
                m.checkOrder(options.keys, options.hotOthersPerKey);
                double ratio = m.rate(others) / a.rate(others);
                ratios.add(ratio);
                sb.append(String.format(Locale.ROOT, "| %s | %d | %,.0f | %,.0f | %.2f | %,.0f |%n", label, r,
                        a.rate(others), m.rate(others), ratio, hotDone * 1e3 / m.millis()));
                log(String.format(Locale.ROOT, "parked limit %s round %d: alone %,.0f, beside the hot key %,.0f msg/s "
                        + "(%.2f)", label, r, a.rate(others), m.rate(others), ratio));
            }
            sb.append(String.format(Locale.ROOT, "| %s | median | | | **%.2f** | |%n", label, median(ratios)));
        }
        sb.append('\n');
        return sb.toString();
    }

    // ------------------------------------------------------------------ one measurement

    /** What the handler saw in one measurement. */
    private final class Run {
        final Map<String, List<Integer>> effects = new ConcurrentHashMap<>();
        final Map<String, AtomicBoolean> running = new ConcurrentHashMap<>();
        final AtomicInteger overlaps = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        final AtomicInteger counted = new AtomicInteger();
        final AtomicLong lastCounted = new AtomicLong();
        final long start = System.nanoTime();
        final java.util.function.Predicate<String> counts;

        Run(java.util.function.Predicate<String> counts) {
            this.counts = counts;
        }

        MessageHandler handler() {
            int failurePercent = options.failurePercent;
            long maxNanos = options.maxHandlerMicros * 1_000L;
            return e -> {
                String key = e.groupId();
                String id = String.valueOf(e.messageId());
                int seq = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
                AtomicBoolean busy = running.computeIfAbsent(key, k -> new AtomicBoolean());
                boolean alone = busy.compareAndSet(false, true);
                try {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    LockSupport.parkNanos(random.nextLong(maxNanos + 1));
                    if (random.nextInt(100) < failurePercent) {
                        failures.incrementAndGet();
                        throw new IllegalStateException("benchmark: transient failure");
                    }
                    effects.computeIfAbsent(key, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                            .add(seq);
                    if (counts.test(key)) {
                        lastCounted.set(System.nanoTime());
                        counted.incrementAndGet();
                    }
                } finally {
                    if (alone) {
                        busy.set(false);
                    } else {
                        overlaps.incrementAndGet();
                    }
                }
            };
        }

        double rate(int n) {
            return n * 1e9 / (lastCounted.get() - start);
        }

        long millis() {
            return (lastCounted.get() - start) / 1_000_000;
        }

        /** @return how many keys' effects are not exactly 0..perKey-1 in order */
        int keysOutOfOrder(int perKey) {
            int bad = 0;
            for (List<Integer> seqs : effects.values()) {
                for (int i = 0; i < seqs.size(); i++) {
                    if (seqs.get(i) != i) {
                        bad++;
                        break;
                    }
                }
            }
            return bad;
        }

        /** Fails the benchmark if a key's effects are not exactly 0..perKey-1 in order, or two runs overlapped. */
        void checkOrder(int keys, int perKey) {
            if (overlaps.get() > 0) {
                throw new IllegalStateException(overlaps.get() + " runs overlapped another run of their key");
            }
            if (effects.size() != keys) {
                throw new IllegalStateException("effects for " + effects.size() + " keys, expected " + keys);
            }
            List<Integer> expected = new ArrayList<>(perKey);
            for (int i = 0; i < perKey; i++) {
                expected.add(i);
            }
            effects.forEach((k, seqs) -> {
                if (!seqs.equals(expected)) {
                    throw new IllegalStateException("key " + k + ": effects " + seqs + " not in publish order");
                }
            });
        }
    }

    /**
     * Consumes {@code queue} until {@code n} effects of the keys {@code counts} accepts happened, then closes the
     * consumer (what is left, the hot key's rest, is released).
     */
    private Run measure(String queue, boolean ordered, Integer parkedLimit, int n,
                        java.util.function.Predicate<String> counts) throws Exception {
        System.gc();
        Run run = new Run(counts);
        Subscription.Builder s = Subscription.builder(queue, run.handler()).concurrency(options.concurrency)
                .retryBackoff(RetryBackoff.of(Duration.ofMillis(5), Duration.ofMillis(20), 2.0, 0.5)).maxAttempts(50);
        if (ordered) {
            s.orderBy(KeySource.groupId()).keyBacklog(options.keyBacklog);
            if (parkedLimit != null) {
                s.parkedLimit(parkedLimit);
            }
        }
        AmqpConsumer consumer = AmqpConsumer.builder().name("ordered-bench").broker(HOST, broker.port())
                .store(InMemoryIdempotencyStore.ofDefaults()).subscribe(s.build()).start();
        try {
            long lastMove = System.nanoTime();
            int last = -1;
            while (run.counted.get() < n) {
                Thread.sleep(20);
                int now = run.counted.get();
                if (now != last) {
                    last = now;
                    lastMove = System.nanoTime();
                } else if (System.nanoTime() - lastMove > EndToEndBenchmark.STALL.toNanos()) {
                    throw new IllegalStateException(queue + ": stalled at " + now + " of " + n + "; "
                            + consumer.health());
                }
            }
        } finally {
            consumer.close(Duration.ofSeconds(30));
        }
        return run;
    }

    /**
     * Messages {@code key-seq} of {@code keys} keys {@code k0..}, {@code perKey} each, each key's in sequence, the keys
     * merged at random (seeded, so every measurement of a size gets the same order): a key's next message is usually
     * far behind its previous one and sometimes within one window of it. With {@code hot} &gt; 0, one message
     * {@code hot-i} of key {@code hot} after each of them, up to {@code hot}.
     *
     * @return (message-id, group-id) pairs in publish order
     */
    private static List<String[]> interleaved(int keys, int perKey, int hot) {
        java.util.Random random = new java.util.Random(20_000L + keys * 31L + perKey);
        int[] next = new int[keys];
        List<Integer> open = new ArrayList<>(keys);
        for (int k = 0; k < keys; k++) {
            open.add(k);
        }
        List<String[]> out = new ArrayList<>();
        int h = 0;
        while (!open.isEmpty()) {
            int i = random.nextInt(open.size());
            int k = open.get(i);
            int s = next[k]++;
            if (next[k] == perKey) {
                open.set(i, open.get(open.size() - 1));
                open.remove(open.size() - 1);
            }
            out.add(new String[] {"k" + k + "-" + s, "k" + k});
            if (h < hot) {
                out.add(new String[] {"hot-" + h, "hot"});
                h++;
            }
        }
        return out;
    }

    private void fill(String queue, List<String[]> messages) throws Exception {
        try (Connection c = client.connect(HOST, broker.port()); Sender sender = c.openSender(queue)) {
            ArrayDeque<Tracker> window = new ArrayDeque<>();
            for (String[] m : messages) {
                Message<String> message = Message.create("update").messageId(m[0]).groupId(m[1]).durable(false);
                window.add(sender.send(message));
                if (window.size() > 5_000) {
                    window.poll().awaitSettlement(60, TimeUnit.SECONDS);
                }
            }
            for (Tracker t : window) {
                t.awaitSettlement(60, TimeUnit.SECONDS);
            }
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static void log(String line) {
        System.out.println("[" + java.time.LocalTime.now().withNano(0) + "] " + line);
    }
}

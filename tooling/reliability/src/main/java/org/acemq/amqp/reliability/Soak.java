package org.acemq.amqp.reliability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The soak: the reliability harness ({@link ReliabilityHarness}) run long, with its consumers and itself sampling
 * their resources, and a verdict that covers both the delivery guarantees and resource growth.
 *
 * <pre>
 * java -cp tooling/reliability/target/classes:$(cat tooling/reliability/target/classpath.txt) \
 *     org.acemq.amqp.reliability.Soak --broker artemis --messages 1000000 --mode separate --out /tmp/soak-artemis
 * </pre>
 *
 * Options: {@code --broker artemis|rabbitmq} (default artemis), {@code --messages N} (unique messages, default
 * 30000), {@code --consumers N} (consumer JVMs, default 2), {@code --mode separate|transactional} (default
 * separate), {@code --out DIR} (report, plots and the harness's work files), {@code --faults} (default
 * {@value #DEFAULT_FAULTS}), {@code --repeats R} (times each fault is injected, default max(1, N / 100,000)),
 * {@code --sample-ms} (default 1000 below 200,000 messages, else 5000), {@code --seed}, {@code --timeout-s},
 * {@code --lease-ms} (the JDBC store's lease, default 30000 = the store's default; the fault harness uses 3000 to keep
 * its pauses short, and the soak has no pauses).
 * Exit code 0 when the verdict is PASS.
 *
 * <p>The bounds, checked on the first and the last window of {@code N / 10} messages processed (100,000 of a
 * 1,000,000 run): every consumer's heap after a full GC, live threads and open file descriptors in the last window
 * at most the first window's maximum plus {@value #HEAP_SLACK_MIB} MiB, {@value #THREAD_SLACK} threads and
 * {@value #FD_SLACK} descriptors; deliveries in hand ({@code acemq.consumer.inflight}) never above two links' worth
 * (prefetch plus concurrency each: a reconnect's old link and the new one); open pooled connections never above the pools' configured maximum; the store
 * table never above the number of unique message ids (duplicates add no row; the 24 h retention removes nothing
 * during a run) and at the end at least the non-poison ones. See docs/reliability.md, "Soak".
 */
public final class Soak {

    static final String DEFAULT_FAULTS = "broker-restart,broker-drop,kill9,pg-restart";
    static final int HEAP_SLACK_MIB = 32;
    /**
     * Netty's pooled allocator takes direct memory in 4 MiB chunks, up to two arenas per core, and
     * keeps them: a new I/O thread after a reconnect may start on another arena. 64 MiB is 16 chunks.
     */
    static final int DIRECT_SLACK_MIB = 64;
    static final int THREAD_SLACK = 8;
    static final int FD_SLACK = 16;
    /** The harness consumer's prefetch ({@link HarnessConsumer}'s default). */
    static final int PREFETCH = 50;
    /** The harness consumer's handler threads ({@link HarnessConsumer}'s default). */
    static final int CONCURRENCY = 4;
    /** The bound on deliveries in hand, by name (RabbitMQ 3 breaks it: see docs/reliability.md, "Findings"). */
    static final String INFLIGHT_METRIC = "deliveries in hand (acemq.consumer.inflight), max per consumer (whole run)";

    /** What to run. */
    public record Options(String broker, int messages, int consumers, String mode, Path out, Set<FaultKind> faults,
            int repeats, Duration sample, long seed, Duration timeout, Duration lease) {

        /** Defaults for {@code messages} unique messages on {@code broker}, written to {@code out}. */
        public static Options defaults(String broker, int messages, Path out) {
            return new Options(broker, messages, 2, "separate", out, FaultKind.parse(DEFAULT_FAULTS),
                    Math.max(1, messages / 100_000), Duration.ofMillis(messages < 200_000 ? 1000 : 5000), 42L,
                    Duration.ofSeconds(Math.max(300, messages / 100)), Duration.ofSeconds(30));
        }

        public Options withMode(String m) {
            return new Options(broker, messages, consumers, m, out, faults, repeats, sample, seed, timeout, lease);
        }
    }

    /** What the soak found: the harness's result, every bound with its figures, the violations. */
    public record Report(Result result, List<Bound> bounds, List<String> violations, Path markdown, List<Path> plots) {
        public boolean passed() {
            return violations.isEmpty();
        }
    }

    /** One checked bound: the figure in the first and the last window, the limit, and whether it held. */
    public record Bound(String metric, String first, String last, String limit, boolean held) {
    }

    /** One consumer sample (see {@link ConsumerSampler}), placed on the progress axis. */
    record Sample(long t, String id, double progress, double heapMiB, int threads, int fds, int pool, int poolActive,
            int poolMax, long accepted, long storeErrors, long interruptions, long inflight, long dropped,
            double directMiB) {
    }

    private Soak() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        int messages = Integer.parseInt(o.getOrDefault("messages", "30000"));
        String broker = o.getOrDefault("broker", "artemis");
        Options d = Options.defaults(broker, messages, Path.of(o.getOrDefault("out", "soak-" + broker)));
        Options opts = new Options(broker, messages, Integer.parseInt(o.getOrDefault("consumers", "2")),
                o.getOrDefault("mode", "separate"), d.out(), FaultKind.parse(o.getOrDefault("faults", DEFAULT_FAULTS)),
                Integer.parseInt(o.getOrDefault("repeats", String.valueOf(d.repeats()))),
                Duration.ofMillis(Long.parseLong(o.getOrDefault("sample-ms", String.valueOf(d.sample().toMillis())))),
                Long.parseLong(o.getOrDefault("seed", "42")),
                Duration.ofSeconds(Long.parseLong(o.getOrDefault("timeout-s",
                        String.valueOf(d.timeout().toSeconds())))),
                Duration.ofMillis(Long.parseLong(o.getOrDefault("lease-ms", "30000"))));
        Report report = run(opts, "java ... " + Soak.class.getName() + " " + String.join(" ", args));
        System.out.println(Files.readString(report.markdown()));
        System.out.println(report.passed() ? "SOAK: PASS" : "SOAK: FAIL " + report.violations());
        System.exit(report.passed() ? 0 : 1);
    }

    /**
     * Runs the soak and writes {@code report.md} and the plots into {@code options.out()}.
     *
     * @param command the command line to put into the report
     */
    public static Report run(Options options, String command) throws Exception {
        if (options.faults().stream().anyMatch(k -> !k.timed())) {
            throw new IllegalArgumentException("the soak injects timed faults only (crash points are the harness's"
                    + " job): " + options.faults());
        }
        Path out = Files.createDirectories(options.out());
        Instant started = Instant.now();
        ReliabilityHarness.Config config = ReliabilityHarness.Config.defaults(options.messages())
                .withConsumers(options.consumers())
                .withFaults(options.faults(), options.repeats())
                .withMode(options.mode())
                .withSeed(options.seed())
                .withTimeout(options.timeout())
                .withLeaseMs(options.lease().toMillis())
                .withWorkDir(out);
        Result result = new ReliabilityHarness(config).broker(options.broker()).sampling(options.sample()).run();
        return report(options, command, started, result, out);
    }

    // ------------------------------------------------------------------------------------------------ report

    static Report report(Options options, String command, Instant started, Result result, Path out)
            throws IOException {
        List<long[]> driver = readDriver(out.resolve("driver-samples.csv"));
        List<SoakChart.Marker> faults = new ArrayList<>();
        Path faultFile = out.resolve("faults.csv");
        for (String line : Files.exists(faultFile) ? Files.readAllLines(faultFile) : List.<String>of()) {
            String[] f = line.split(",");
            faults.add(new SoakChart.Marker(Double.parseDouble(f[1]), f[2]));
        }
        List<Sample> samples = readSamples(out, driver);
        double end = driver.isEmpty() ? 0 : driver.get(driver.size() - 1)[1];
        double window = Math.max(1, options.messages() / 10.0);
        List<Sample> first = samples.stream().filter(s -> s.progress() <= window).toList();
        List<Sample> last = samples.stream().filter(s -> s.progress() >= end - window).toList();

        List<String> violations = new ArrayList<>(result.violations());
        List<Bound> bounds = new ArrayList<>();
        if (first.isEmpty() || last.isEmpty()) {
            violations.add("no consumer samples in the " + (first.isEmpty() ? "first" : "last") + " window");
        }
        double heapFirst = max(first, Sample::heapMiB);
        double heapLast = max(last, Sample::heapMiB);
        bound(bounds, violations, "heap after GC, max per consumer (MiB)", heapFirst, heapLast,
                heapFirst + HEAP_SLACK_MIB, "first + " + HEAP_SLACK_MIB + " MiB");
        // direct buffers (Netty's pooled arenas: protonj2's frames and payloads); a buffer never freed shows here, not
        // in the heap
        double directFirst = max(first, Sample::directMiB);
        double directLast = max(last, Sample::directMiB);
        bound(bounds, violations, "direct buffers, max per consumer (MiB)", directFirst, directLast,
                directFirst + DIRECT_SLACK_MIB, "first + " + DIRECT_SLACK_MIB + " MiB");
        double thrFirst = max(first, Sample::threads);
        double thrLast = max(last, Sample::threads);
        bound(bounds, violations, "live threads, max per consumer", thrFirst, thrLast, thrFirst + THREAD_SLACK,
                "first + " + THREAD_SLACK);
        double fdFirst = max(first, Sample::fds);
        double fdLast = max(last, Sample::fds);
        bound(bounds, violations, "open file descriptors, max per consumer", fdFirst, fdLast, fdFirst + FD_SLACK,
                "first + " + FD_SLACK);
        double poolMax = max(samples, Sample::poolMax);
        double poolAll = max(samples, Sample::pool);
        bound(bounds, violations, "pooled connections open, max per consumer (whole run)", max(first, Sample::pool),
                poolAll, poolMax, "the pools' maximum sizes (" + fmt(poolMax) + ")");
        double rowsMax = driver.stream().mapToDouble(r -> r[2]).max().orElse(0);
        double rowsEnd = driver.isEmpty() ? 0 : driver.get(driver.size() - 1)[2];
        int nonPoison = result.messages() - result.poison();
        boolean rowsHeld = rowsMax <= result.messages() && rowsEnd >= nonPoison;
        bounds.add(new Bound("store table rows (whole run; at the end)", fmt(rowsMax), fmt(rowsEnd),
                "≤ unique ids (" + result.messages() + "); at the end ≥ non-poison (" + nonPoison + ")", rowsHeld));
        if (!rowsHeld) {
            violations.add("store table rows out of bounds: max " + fmt(rowsMax) + ", at the end " + fmt(rowsEnd));
        }
        // deliveries in hand: on a broker that keeps to link credit one link holds at most the prefetch plus the
        // deliveries its handler threads took (54 measured on Artemis); right after a reconnect the gauge also counts
        // the dead link's deliveries until their handlers return (LinkCredit's retiring links), beside the new link's
        double inflightAll = max(samples, Sample::inflight);
        if (inflightAll >= 0) {
            bound(bounds, violations, INFLIGHT_METRIC, max(first, Sample::inflight), inflightAll,
                    2.0 * (PREFETCH + CONCURRENCY), "two links' worth across a reconnect, 2 x (prefetch " + PREFETCH
                            + " + concurrency " + CONCURRENCY + ")");
        }
        // duplicated effects the guarantee allows (separate mode): only attempts interrupted between effect and
        // confirm, each by a dead process or a store outage. A process holds at most its unsettled deliveries: the
        // prefetch (50) on a broker that keeps to link credit; RabbitMQ 3.x sends beyond it (rabbitmq-server#2597),
        // so the bound takes the largest in-flight count the consumers reported
        int deaths = result.faults().getOrDefault(FaultKind.KILL9, 0) + countDeaths(out);
        int outages = result.faults().getOrDefault(FaultKind.PG_RESTART, 0);
        int prefetch = PREFETCH;
        long inHand = Math.max(prefetch, samples.stream().mapToLong(Sample::inflight).max().orElse(0));
        long allowed = options.mode().equals("transactional") ? 0
                : (deaths + (long) outages * options.consumers()) * inHand;
        boolean dupHeld = result.extraEffects() <= allowed && result.duplicateConfirmed() == 0;
        bounds.add(new Bound("duplicated effects (extra effect rows)", "-", result.extraEffects()
                + (result.extraByCause().isEmpty() ? "" : " " + result.extraByCause()),
                options.mode().equals("transactional") ? "0 (transactional handler)"
                        : "≤ (consumer deaths " + deaths + " + PostgreSQL restarts " + outages + " × consumers) × "
                                + "deliveries in hand " + inHand + " (max of prefetch " + prefetch
                                + " and the largest acemq.consumer.inflight) = " + allowed + "; 0 confirmed twice",
                        dupHeld));
        if (!dupHeld) {
            violations.add("duplicated effects " + result.extraEffects() + " above the allowed " + allowed);
        }

        // nothing from a dead connection: no accept reported while it is down, and (separate mode) no disposition
        // attempted on a dead engine: with the engine hooks on (the default), one that waited in a busy I/O thread's
        // queue while the connection failed is dropped and counted (acemq.consumer.dispositions.dropped), so a single
        // ENGINE_SHUTDOWN line fails the verdict (docs/reliability.md)
        long engineShutdown = countConsumerLogLines(out, "ENGINE_SHUTDOWN");
        long acceptedWhileDown = countConsumerLogLines(out, MeteredObserver.ACCEPTED_WHILE_DOWN);
        // transactional settlement still goes through protonj2's client API, which logs one per late disposition
        boolean shutdownCounts = !options.mode().equals("transactional");
        boolean deadHeld = acceptedWhileDown == 0 && (!shutdownCounts || engineShutdown == 0);
        String late = "accepted > 50 ms into an outage, not reported dropped (by 2 s after it)";
        bounds.add(new Bound(shutdownCounts ? late + "; ENGINE_SHUTDOWN lines"
                        : late + " (ENGINE_SHUTDOWN lines, reported only)", "-",
                acceptedWhileDown + "; " + engineShutdown, shutdownCounts ? "0; 0" : "0", deadHeld));
        if (acceptedWhileDown > 0) {
            violations.add(acceptedWhileDown + " deliveries were reported accepted while the connection was down");
        }
        if (shutdownCounts && engineShutdown > 0) {
            violations.add(engineShutdown + " ENGINE_SHUTDOWN lines: dispositions attempted on a dead engine");
        }

        List<Path> plots = plots(out, samples, driver, faults, window, end, heapFirst, thrFirst, fdFirst, poolMax,
                result.messages());
        Path md = out.resolve("report.md");
        Files.writeString(md, markdown(options, command, started, result, bounds, violations, plots, samples,
                driver, faults, window, end));
        return new Report(result, bounds, violations, md, plots);
    }

    private static void bound(List<Bound> bounds, List<String> violations, String metric, double first, double last,
            double limit, String rule) {
        boolean held = last <= limit;
        bounds.add(new Bound(metric, fmt(first), fmt(last), "≤ " + fmt(limit) + " (" + rule + ")", held));
        if (!held) {
            violations.add(metric + ": last window " + fmt(last) + " > " + fmt(limit) + " (" + rule + ")");
        }
    }

    /** @return how many lines of the consumer incarnations' logs contain {@code text} */
    private static long countConsumerLogLines(Path out, String text) throws IOException {
        long n = 0;
        try (java.util.stream.Stream<Path> files = Files.list(out)) {
            for (Path log : files.filter(p -> p.getFileName().toString().matches("consumer-.*\\.log")).toList()) {
                try (java.util.stream.Stream<String> lines = Files.lines(log, java.nio.charset.StandardCharsets.UTF_8)) {
                    n += lines.filter(l -> l.contains(text)).count();
                }
            }
        }
        return n;
    }

    /** @return consumer incarnations that died other than by the soak's SIGKILL (counted from the harness log) */
    private static int countDeaths(Path out) throws IOException {
        Path log = out.resolve("harness.log");
        if (!Files.exists(log)) {
            return 0;
        }
        long exits = Files.readAllLines(log).stream().filter(l -> l.contains(" exited with ")).count();
        long kills = Files.readAllLines(log).stream().filter(l -> l.contains("] kill -9 ")).count();
        return (int) Math.max(0, exits - kills);
    }

    private static List<long[]> readDriver(Path file) throws IOException {
        List<long[]> rows = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            String[] f = line.split(",");
            rows.add(new long[] {Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]),
                    Long.parseLong(f[3])});
        }
        rows.sort(Comparator.comparingLong(r -> r[0]));
        return rows;
    }

    private static List<Sample> readSamples(Path out, List<long[]> driver) throws IOException {
        List<Sample> samples = new ArrayList<>();
        List<Path> files;
        try (Stream<Path> s = Files.list(out)) {
            files = s.filter(p -> p.getFileName().toString().matches("samples-c.*\\.csv")).sorted().toList();
        }
        for (Path f : files) {
            for (String line : Files.readAllLines(f)) {
                Map<String, String> kv = new HashMap<>();
                for (String token : line.trim().split(" ")) {
                    int eq = token.indexOf('=');
                    if (eq > 0) {
                        kv.put(token.substring(0, eq), token.substring(eq + 1));
                    }
                }
                if (!kv.containsKey("storeErrors")) {
                    continue; // a line cut short by a SIGKILL
                }
                long t = Long.parseLong(kv.get("t"));
                samples.add(new Sample(t, kv.get("id"), progressAt(driver, t),
                        Long.parseLong(kv.get("heap")) / 1048576.0, Integer.parseInt(kv.get("threads")),
                        Integer.parseInt(kv.get("fds")), Integer.parseInt(kv.get("pool")),
                        Integer.parseInt(kv.get("poolActive")), Integer.parseInt(kv.get("poolMax")),
                        Long.parseLong(kv.get("accepted")), Long.parseLong(kv.get("storeErrors")),
                        Long.parseLong(kv.get("interruptions")), Long.parseLong(kv.getOrDefault("inflight", "-1")),
                        Long.parseLong(kv.getOrDefault("dropped", "0")),
                        Long.parseLong(kv.getOrDefault("direct", "-1")) / 1048576.0));
            }
        }
        samples.sort(Comparator.comparingLong(Sample::t));
        return samples;
    }

    /** Effect rows at time {@code t}, interpolated between the driver's samples. */
    static double progressAt(List<long[]> driver, long t) {
        if (driver.isEmpty() || t <= driver.get(0)[0]) {
            return driver.isEmpty() ? 0 : driver.get(0)[1];
        }
        for (int i = 1; i < driver.size(); i++) {
            long[] b = driver.get(i);
            if (t <= b[0]) {
                long[] a = driver.get(i - 1);
                double f = b[0] == a[0] ? 1 : (double) (t - a[0]) / (b[0] - a[0]);
                return a[1] + f * (b[1] - a[1]);
            }
        }
        return driver.get(driver.size() - 1)[1];
    }

    private static double max(List<Sample> samples, ToDoubleFunction<Sample> f) {
        return samples.stream().mapToDouble(f).max().orElse(Double.NaN);
    }

    // ------------------------------------------------------------------------------------------------ plots

    private static List<Path> plots(Path out, List<Sample> samples, List<long[]> driver, List<SoakChart.Marker> faults,
            double window, double end, double heapFirst, double thrFirst, double fdFirst, double poolMax,
            int uniqueIds) throws IOException {
        List<Path> plots = new ArrayList<>();
        plots.add(plot(out, "heap.png", "Heap used after a full GC, per consumer JVM", "MiB", samples,
                Sample::heapMiB, faults, heapFirst + HEAP_SLACK_MIB, window, end));
        plots.add(plot(out, "threads.png", "Live threads, per consumer JVM", "threads", samples, Sample::threads,
                faults, thrFirst + THREAD_SLACK, window, end));
        plots.add(plot(out, "fds.png", "Open file descriptors, per consumer JVM", "descriptors", samples,
                Sample::fds, faults, fdFirst + FD_SLACK, window, end));
        plots.add(plot(out, "pool.png", "Pooled JDBC connections open (all Hikari pools), per consumer JVM",
                "connections", samples, Sample::pool, faults, poolMax, window, end));
        plots.add(plot(out, "meters.png", "acemq.consumer.deliveries (accepted), per consumer incarnation",
                "deliveries", samples, s -> s.accepted(), faults, Double.NaN, window, end));
        plots.add(plot(out, "inflight.png", "acemq.consumer.inflight (received, not yet settled), per consumer JVM",
                "deliveries", samples, s -> s.inflight(), faults, Double.NaN, window, end));
        List<double[]> rows = new ArrayList<>();
        List<double[]> queued = new ArrayList<>();
        for (long[] r : driver) {
            rows.add(new double[] {r[1], r[2]});
            if (r[3] >= 0) {
                queued.add(new double[] {r[1], r[3]});
            }
        }
        Path store = out.resolve("store-rows.png");
        SoakChart.write(store, "Idempotency store table rows (SELECT count(*))", "rows",
                List.of(new SoakChart.Series("store rows", 0, rows)), faults, uniqueIds, window, end);
        plots.add(store);
        Path queue = out.resolve("queue.png");
        SoakChart.write(queue, "Messages waiting in the queue (published in waves)", "messages",
                List.of(new SoakChart.Series("queue", 1, queued)), faults, Double.NaN, window, end);
        plots.add(queue);
        return plots;
    }

    private static Path plot(Path out, String name, String title, String unit, List<Sample> samples,
            ToDoubleFunction<Sample> f, List<SoakChart.Marker> faults, double bound, double window, double end)
            throws IOException {
        Map<String, List<double[]>> byId = new TreeMap<>();
        for (Sample s : samples) {
            byId.computeIfAbsent(s.id(), k -> new ArrayList<>()).add(new double[] {s.progress(), f.applyAsDouble(s)});
        }
        List<SoakChart.Series> series = new ArrayList<>();
        byId.forEach((id, points) -> series.add(new SoakChart.Series(id,
                Integer.parseInt(id.substring(1, id.indexOf('.'))) - 1, points)));
        Path file = out.resolve(name);
        SoakChart.write(file, title, unit, series, faults, bound, window, end);
        return file;
    }

    // ------------------------------------------------------------------------------------------------ markdown

    private static String markdown(Options options, String command, Instant started, Result result,
            List<Bound> bounds, List<String> violations, List<Path> plots, List<Sample> samples, List<long[]> driver,
            List<SoakChart.Marker> faults, double window, double end) {
        StringBuilder sb = new StringBuilder();
        sb.append("# Soak: ").append(options.broker()).append(", ").append(options.messages())
.append(" messages, ").append(options.mode()).append(" mode\n\n");
        sb.append(options.consumers()).append(" consumer JVMs, JDBC store lease ").append(options.lease().toMillis())
                .append(" ms, faults ").append(options.faults().stream().map(FaultKind::label).toList())
                .append(" × ").append(options.repeats()).append(", consumer samples every ")
                .append(options.sample().toMillis()).append(" ms.\n\n");
        sb.append("Started ").append(started).append(", took ")
                .append(String.format(Locale.ROOT, "%.1f min", result.duration().toMillis() / 60000.0))
                .append(". Command:\n\n```\n").append(command).append("\n```\n\n");
        sb.append("## Verdict: ").append(violations.isEmpty() ? "PASS" : "FAIL").append("\n\n");
        if (!violations.isEmpty()) {
            violations.forEach(v -> sb.append("- ").append(v).append('\n'));
            sb.append('\n');
        }
        sb.append("Windows: first = samples at 0–").append(fmt(window)).append(" messages processed, last = ")
                .append(fmt(Math.max(0, end - window))).append("–").append(fmt(end)).append(" (")
                .append(samples.size()).append(" consumer samples, ").append(driver.size())
                .append(" driver samples).\n\n");
        sb.append("| metric | first window | last window | bound | held |\n|---|---|---|---|---|\n");
        for (Bound b : bounds) {
            sb.append("| ").append(b.metric()).append(" | ").append(b.first()).append(" | ").append(b.last())
                    .append(" | ").append(b.limit()).append(" | ").append(b.held() ? "yes" : "**no**").append(" |\n");
        }
        sb.append("\n## Delivery checks (the harness's checker)\n\n").append(result.table()).append('\n');
        Map<String, Integer> kinds = new LinkedHashMap<>();
        faults.forEach(m -> kinds.merge(m.label(), 1, Integer::sum));
        sb.append("Fault timeline (effect rows when injected): ")
                .append(faults.stream().map(m -> m.label() + "@" + fmt(m.x())).collect(Collectors.joining(", ")))
                .append("\n\n");
        long maxStoreErrors = samples.stream().mapToLong(Sample::storeErrors).max().orElse(0);
        long maxInterruptions = samples.stream().mapToLong(Sample::interruptions).max().orElse(0);
        long maxInflight = samples.stream().mapToLong(Sample::inflight).max().orElse(0);
        long dropped = droppedDispositions(samples);
        sb.append("Meters (per incarnation, largest seen): acemq.store.errors ").append(maxStoreErrors)
                .append(", acemq.consumer.connection.interruptions ").append(maxInterruptions)
                .append("; acemq.consumer.inflight at most ").append(maxInflight).append(" (prefetch 50)")
                .append("; acemq.consumer.dispositions.dropped ").append(dropped).append(" in all incarnations.\n\n");
        sb.append("## Plots\n\n");
        for (Path p : plots) {
            sb.append("![").append(p.getFileName()).append("](").append(p.getFileName()).append(")\n\n");
        }
        return sb.toString();
    }

    /** @return dispositions dropped after a connection loss, summed over the incarnations (their counters only grow) */
    static long droppedDispositions(List<Sample> samples) {
        Map<String, Long> perIncarnation = new LinkedHashMap<>();
        for (Sample s : samples) {
            perIncarnation.merge(s.id(), s.dropped(), Math::max);
        }
        return perIncarnation.values().stream().mapToLong(Long::longValue).sum();
    }

    static String fmt(double v) {
        if (Double.isNaN(v)) {
            return "n/a";
        }
        return v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v);
    }

    /** @return the soak's default fault kinds */
    static Set<FaultKind> defaultFaults() {
        return EnumSet.copyOf(FaultKind.parse(DEFAULT_FAULTS));
    }
}

package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariDataSource;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import javax.imageio.ImageIO;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.apache.qpid.protonj2.client.Client;

/**
 * The sustained PostgreSQL run: {@code --messages} (1,000,000) messages through one AceMQ consumer with
 * JdbcIdempotencyStore at its defaults on the durable embedded PostgreSQL of the e2e benchmark, with the retention
 * purge running beside it (a short {@code --retention}, so that rows do expire and get deleted while the run goes on),
 * and the throughput of every {@code --segment} (100,000) messages. Verdict: the last segment within 10 % of the
 * first. Writes a Markdown report and a PNG chart.
 *
 * <pre>
 * java -jar tooling/benchmarks/target/acemq-benchmarks.jar sustained [--messages 1000000] [--segment 100000] [--warmup 20000]
 *      [--threads 4] [--pg-pool 8] [--retention-seconds 30] [--purge-interval-seconds 5]
 *      [--data-dir tooling/benchmarks/target/bench-data] [--out tooling/benchmarks/target/sustained-results.md]
 *      [--png tooling/benchmarks/target/sustained.png] [--broker-jvm "-Xms1g -Xmx4g -XX:+UseG1GC"]
 * </pre>
 *
 * A warm-up of {@code --warmup} messages (another queue, the same store and table, not counted) runs first, so that
 * the first segment is not the JIT's. The queue is filled with every message before the consumer starts (not timed),
 * so the consumer never waits for a publisher; the broker gets a larger heap than in the e2e run so that a million durable messages stay in memory.
 */
public final class SustainedPostgres {

    private int messages = 1_000_000;
    private int warmup = 20_000;
    private int segment = 100_000;
    private int threads = 4;
    private int pgPool = 8;
    private int retentionSeconds = 30;
    private int purgeIntervalSeconds = 5;
    private Path dataDir = Path.of("tooling", "benchmarks", "target", "bench-data");
    private Path out = Path.of("tooling", "benchmarks", "target", "sustained-results.md");
    private Path png = Path.of("tooling", "benchmarks", "target", "sustained.png");
    private List<String> brokerJvm = List.of("-Xms1g", "-Xmx4g", "-XX:+UseG1GC");
    private String command;

    /** One segment's end: when it was reached and the processes' CPU time then. */
    private record Mark(long nanos, long clientCpu, long brokerCpu, long pgCpu) {
    }

    /** What the table and the purger looked like at a segment's end (read shortly after it). */
    private record TableState(long liveRows, long deadRows, long purged, int purgeRuns, long purgeMillis) {
    }

    private SustainedPostgres() {
    }

    /**
     * @param args see the class comment
     * @throws Exception if the run fails
     */
    public static void main(String[] args) throws Exception {
        EndToEndBenchmark.quietLogging();
        System.setProperty("java.awt.headless", "true");
        SustainedPostgres run = new SustainedPostgres();
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + args[i]);
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--messages" -> run.messages = Integer.parseInt(v);
                case "--segment" -> run.segment = Integer.parseInt(v);
                case "--warmup" -> run.warmup = Integer.parseInt(v);
                case "--threads" -> run.threads = Integer.parseInt(v);
                case "--pg-pool" -> run.pgPool = Integer.parseInt(v);
                case "--retention-seconds" -> run.retentionSeconds = Integer.parseInt(v);
                case "--purge-interval-seconds" -> run.purgeIntervalSeconds = Integer.parseInt(v);
                case "--data-dir" -> run.dataDir = Path.of(v);
                case "--out" -> run.out = Path.of(v);
                case "--png" -> run.png = Path.of(v);
                case "--broker-jvm" -> run.brokerJvm = List.of(v.trim().split("\\s+"));
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (run.segment < 1 || run.messages < 2 * run.segment || run.messages % run.segment != 0) {
            throw new IllegalArgumentException("--messages must be a multiple of --segment and at least two segments");
        }
        run.command = "tooling/benchmarks/run.sh sustained" + (args.length == 0 ? "" : " " + String.join(" ", args));
        String report = run.run();
        System.out.println();
        System.out.println(report);
        if (run.out.getParent() != null) {
            Files.createDirectories(run.out.getParent());
        }
        Files.writeString(run.out, report);
        System.out.println("(written to " + run.out.toAbsolutePath() + " and " + run.png.toAbsolutePath() + ")");
        System.exit(0);
    }

    private String run() throws Exception {
        String started = ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
        String loadStart = BenchEnv.loadAverage();
        long t0 = System.nanoTime();
        Client client = Client.create();
        try (BenchEnv.Postgres pg = BenchEnv.Postgres.open(null, null, null, dataDir);
             BenchEnv.Broker broker = BenchEnv.Broker.start(true, brokerJvm, dataDir)) {
            log(pg.description());
            log("broker: " + broker.config());
            String queue = "sustained." + System.currentTimeMillis();
            long f0 = System.nanoTime();
            log("filling " + queue + " with " + messages + " durable messages");
            EndToEndBenchmark.fill(client, broker.port(), queue, messages, true);
            double fillSeconds = (System.nanoTime() - f0) / 1e9;
            log(String.format(Locale.ROOT, "filled in %.0f s; load %s", fillSeconds, BenchEnv.loadAverage()));
            String loadConsume = BenchEnv.loadAverage();

            String table = "acemq_sustained";
            AtomicLong purged = new AtomicLong();
            AtomicInteger purgeRuns = new AtomicInteger();
            AtomicLong purgeNanos = new AtomicLong();
            int segments = messages / segment;
            AtomicReferenceArray<Mark> marks = new AtomicReferenceArray<>(segments + 1);
            TableState[] states = new TableState[segments + 1];
            ProcessHandle brokerHandle = broker.handle();
            AtomicInteger handled = new AtomicInteger();
            AtomicInteger other = new AtomicInteger();
            ConsumerObserver observer = new ConsumerObserver() {
                @Override
                public void settled(String subscription, Outcome outcome, SettleReason reason) {
                    if (outcome != Outcome.ACCEPTED || reason != SettleReason.PROCESSED) {
                        other.incrementAndGet();
                        return;
                    }
                    int n = handled.incrementAndGet();
                    if (n % segment == 0) {
                        marks.set(n / segment, mark(brokerHandle, pg));
                    }
                }
            };
            ScheduledExecutorService purger = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "bench-purge");
                t.setDaemon(true);
                return t;
            });
            String storeText;
            try (HikariDataSource pool = pg.pool(pgPool, "sustained")) {
                JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool).tableName(table)
                        .retention(Duration.ofSeconds(retentionSeconds)).build();
                store.createSchema();
                storeText = store.toString();
                // what the starter's JdbcStorePurger does (acemq.store.jdbc.purge-interval), at a shorter interval
                purger.scheduleWithFixedDelay(() -> {
                    long p0 = System.nanoTime();
                    try {
                        purged.addAndGet(store.purgeExpired());
                    } catch (RuntimeException e) {
                        log("purge failed: " + e);
                    }
                    purgeNanos.addAndGet(System.nanoTime() - p0);
                    purgeRuns.incrementAndGet();
                }, purgeIntervalSeconds, purgeIntervalSeconds, TimeUnit.SECONDS);
                if (warmup > 0) {
                    String warmQueue = queue + ".warmup";
                    EndToEndBenchmark.fill(client, broker.port(), warmQueue, warmup, true);
                    EndToEndBenchmark.Counter counter = new EndToEndBenchmark.Counter(warmup, 0);
                    AmqpConsumer warm = AmqpConsumer.builder().name("sustained-warmup")
                            .broker(EndToEndBenchmark.HOST, broker.port()).store(store).observer(counter)
                            .subscribe(Subscription.builder(warmQueue, e -> { }).concurrency(threads)
                                    .prefetch(EndToEndBenchmark.CREDIT - threads).build())
                            .start();
                    try {
                        EndToEndBenchmark.awaitAll(counter.done, "sustained warm-up", warmup);
                    } finally {
                        warm.close(Duration.ofSeconds(30));
                    }
                    log("warm-up: " + warmup + " messages through the same store");
                }
                marks.set(0, mark(brokerHandle, pg));
                AmqpConsumer consumer = AmqpConsumer.builder().name("sustained")
                        .broker(EndToEndBenchmark.HOST, broker.port()).store(store).observer(observer)
                        .subscribe(Subscription.builder(queue, e -> { }).concurrency(threads)
                                .prefetch(EndToEndBenchmark.CREDIT - threads).build())
                        .start();
                try {
                    int seen = 0;
                    long lastMove = System.nanoTime();
                    int lastCount = 0;
                    while (seen < segments) {
                        Thread.sleep(200);
                        int now = handled.get();
                        if (now != lastCount) {
                            lastCount = now;
                            lastMove = System.nanoTime();
                        } else if (System.nanoTime() - lastMove > EndToEndBenchmark.STALL.toNanos()) {
                            throw new IllegalStateException("stalled at " + now + " of " + messages);
                        }
                        while (seen < segments && marks.get(seen + 1) != null) {
                            seen++;
                            states[seen] = tableState(pg, table, purged.get(), purgeRuns.get(), purgeNanos.get());
                            Mark a = marks.get(seen - 1);
                            Mark b = marks.get(seen);
                            log(String.format(Locale.ROOT, "segment %2d: %,9.0f msg/s  live rows %,d  dead %,d"
                                            + "  purged so far %,d (%d runs)  load %s", seen,
                                    segment * 1e9 / (b.nanos() - a.nanos()), states[seen].liveRows(),
                                    states[seen].deadRows(), states[seen].purged(), states[seen].purgeRuns(),
                                    BenchEnv.loadAverage()));
                        }
                    }
                } finally {
                    consumer.close(Duration.ofSeconds(30));
                    purger.shutdownNow();
                    purger.awaitTermination(30, TimeUnit.SECONDS);
                }
            }
            if (other.get() > 0) {
                throw new IllegalStateException(other.get() + " deliveries settled otherwise than accepted as processed");
            }
            pg.execute("DROP TABLE IF EXISTS " + table);
            pg.execute("DROP TABLE IF EXISTS " + table + "_outbox"); // the store's outbox, made by createSchema()
            String minutes = String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 60e9);
            return report(started, minutes, loadStart, loadConsume, fillSeconds, pg.description(), broker.config(),
                    storeText, toArray(marks), states);
        } finally {
            client.close();
        }
    }

    private static double medianOf(double[] values) {
        double[] v = values.clone();
        java.util.Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static Mark[] toArray(AtomicReferenceArray<Mark> marks) {
        Mark[] out = new Mark[marks.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = marks.get(i);
        }
        return out;
    }

    private static Mark mark(ProcessHandle broker, BenchEnv.Postgres pg) {
        return new Mark(System.nanoTime(), BenchEnv.cpuNanos(ProcessHandle.current()), BenchEnv.cpuNanos(broker),
                pg.serverCpuNanos());
    }

    private static TableState tableState(BenchEnv.Postgres pg, String table, long purged, int runs, long nanos) {
        try (var c = pg.pool(1, "state"); var conn = c.getConnection(); Statement s = conn.createStatement();
             ResultSet rs = s.executeQuery("SELECT n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname = '"
                     + table + "'")) {
            return rs.next() ? new TableState(rs.getLong(1), rs.getLong(2), purged, runs, nanos / 1_000_000)
                    : new TableState(-1, -1, purged, runs, nanos / 1_000_000);
        } catch (Exception e) {
            return new TableState(-1, -1, purged, runs, nanos / 1_000_000);
        }
    }

    private String report(String started, String minutes, String loadStart, String loadConsume, double fillSeconds,
                          String pgText, String brokerText, String storeText, Mark[] marks, TableState[] states)
            throws Exception {
        int segments = marks.length - 1;
        double[] rates = new double[segments];
        StringBuilder rows = new StringBuilder();
        for (int i = 1; i <= segments; i++) {
            Mark a = marks[i - 1];
            Mark b = marks[i];
            rates[i - 1] = segment * 1e9 / (b.nanos() - a.nanos());
            rows.append(String.format(Locale.ROOT, "| %,d–%,d | %,.0f | %.2f | %.1f | %.1f | %s | %,d | %,d | %,d |%n",
                    (i - 1) * segment + 1, i * segment, rates[i - 1], rates[i - 1] / rates[0],
                    (b.clientCpu() - a.clientCpu()) / 1e3 / segment, (b.brokerCpu() - a.brokerCpu()) / 1e3 / segment,
                    a.pgCpu() < 0 ? "—" : String.format(Locale.ROOT, "%.1f", (b.pgCpu() - a.pgCpu()) / 1e3 / segment),
                    states[i].liveRows(), states[i].deadRows(), states[i].purged()));
        }
        double overall = (double) messages * 1e9 / (marks[segments].nanos() - marks[0].nanos());
        double last = rates[segments - 1] / rates[0];
        boolean pass = last >= 0.9;
        chart(rates);
        TableState end = states[segments];
        return "## Sustained PostgreSQL run\n\n"
                + "Run " + started + " on " + BenchEnv.machine() + ", " + minutes + " min, command `" + command + "`.\n"
                + "Load average (1/5/15 min) at start: " + loadStart + "; when consuming started: " + loadConsume + ".\n"
                + "PostgreSQL: " + pgText + ".\n"
                + "Broker: embedded Artemis 2.55 in its own JVM (" + String.join(" ", brokerJvm) + "), " + brokerText
                + ".\n"
                + "Store: " + storeText + " (every setting at its default except retention " + retentionSeconds
                + " s), pool " + pgPool + ", " + threads + " handler threads, prefetch " + (EndToEndBenchmark.CREDIT
                - threads) + ", no-op handler. Purge: `purgeExpired()` (batches of "
                + JdbcIdempotencyStore.DEFAULT_PURGE_BATCH_SIZE + ", " + JdbcIdempotencyStore.DEFAULT_PURGE_PAUSE
                .toMillis() + " ms between batches) every " + purgeIntervalSeconds + " s on a thread of the client "
                + "JVM, as the starter's `JdbcStorePurger` does every `acemq.store.jdbc.purge-interval` (default 1 min)."
                + "\n" + String.format(Locale.ROOT, "Queue filled with %,d durable 100-byte messages before the "
                + "consumer started (%.0f s, not timed); a warm-up of %,d messages through the same store and table "
                + "(another queue, not counted) ran first.%n%n", messages, fillSeconds, warmup)
                + "| messages | msg/s | ratio to first | client CPU µs/msg | broker CPU µs/msg | PostgreSQL CPU µs/msg "
                + "| live rows at end | dead rows at end | rows purged so far |\n"
                + "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n" + rows
                + String.format(Locale.ROOT, "%nOverall: %,.0f msg/s over %,d messages. Purge: %,d rows deleted in %d "
                        + "runs, %,d ms spent in them.%n%n", overall, messages, end.purged(), end.purgeRuns(),
                        end.purgeMillis())
                + String.format(Locale.ROOT, "**Verdict: last %,d within 10 %% of the first (not more than 10 %% "
                        + "slower): %s** (%,.0f against %,.0f msg/s, ratio %.2f). Stricter readings of the same run: "
                        + "the last against the fastest segment %.2f, against the median segment %.2f; slowest "
                        + "segment %.2f of the first.%n%n", segment, pass ? "PASS" : "FAIL", rates[segments - 1],
                        rates[0], last, rates[segments - 1] / java.util.Arrays.stream(rates).max().orElse(1),
                        rates[segments - 1] / medianOf(rates),
                        java.util.Arrays.stream(rates).min().orElse(0) / rates[0])
                + "Live and dead rows: PostgreSQL's `pg_stat_user_tables` estimates, read just after each segment "
                + "ended. Time and CPU of a segment: from the settlement of the previous segment's last message to "
                + "that of its own last one (the first segment from the consumer's start). Chart: " + png + ".\n";
    }

    /** A PNG line chart of msg/s per segment, with the first segment's rate and its −10 % line. */
    private void chart(double[] rates) throws Exception {
        int w = 900;
        int h = 420;
        int left = 80;
        int right = 30;
        int top = 40;
        int bottom = 60;
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, w, h);
        double max = 0;
        for (double r : rates) {
            max = Math.max(max, r);
        }
        max = Math.ceil(max * 1.15 / 1000) * 1000;
        int plotW = w - left - right;
        int plotH = h - top - bottom;
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        g.setColor(Color.LIGHT_GRAY);
        for (int i = 0; i <= 5; i++) {
            int y = top + plotH - (int) (plotH * i / 5.0);
            g.drawLine(left, y, left + plotW, y);
            g.setColor(Color.DARK_GRAY);
            g.drawString(String.format(Locale.ROOT, "%,.0f", max * i / 5), 10, y + 4);
            g.setColor(Color.LIGHT_GRAY);
        }
        g.setColor(Color.BLACK);
        g.drawLine(left, top, left, top + plotH);
        g.drawLine(left, top + plotH, left + plotW, top + plotH);
        int n = rates.length;
        int[] xs = new int[n];
        int[] ys = new int[n];
        for (int i = 0; i < n; i++) {
            xs[i] = left + (int) (plotW * (i + 0.5) / n);
            ys[i] = top + plotH - (int) (plotH * rates[i] / max);
            g.setColor(Color.DARK_GRAY);
            g.drawString(Integer.toString((i + 1) * segment / 1000) + "k", xs[i] - 14, top + plotH + 18);
        }
        int y90 = top + plotH - (int) (plotH * rates[0] * 0.9 / max);
        g.setColor(new Color(200, 60, 60));
        g.setStroke(new BasicStroke(1, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10, new float[] {6, 4}, 0));
        g.drawLine(left, y90, left + plotW, y90);
        g.drawString("first segment − 10 %", left + plotW - 140, y90 - 6);
        g.setStroke(new BasicStroke(2.5f));
        g.setColor(new Color(30, 90, 180));
        g.drawPolyline(xs, ys, n);
        for (int i = 0; i < n; i++) {
            g.fillOval(xs[i] - 4, ys[i] - 4, 8, 8);
        }
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
        g.drawString(String.format(Locale.ROOT, "AceMQ + JdbcIdempotencyStore on durable PostgreSQL: msg/s per %,d "
                + "messages", segment), left, 18);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        g.drawString(String.format(Locale.ROOT, "store defaults, retention %d s, purge every %d s, %d handler threads",
                retentionSeconds, purgeIntervalSeconds, threads), left, 34);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        g.drawString("messages consumed", left + plotW / 2 - 50, h - 20);
        g.dispose();
        if (png.getParent() != null) {
            Files.createDirectories(png.getParent());
        }
        ImageIO.write(img, "png", png.toFile());
    }

    private static void log(String line) {
        System.out.println("# " + line);
        System.out.flush();
    }
}

package org.acemq.amqp.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Predicate;
import org.acemq.amqp.benchmarks.e2e.BenchEnv;
import org.acemq.amqp.benchmarks.e2e.EndToEndBenchmark;
import org.acemq.amqp.benchmarks.e2e.FingerprintCost;
import org.acemq.amqp.benchmarks.e2e.ReadCost;

/**
 * The one entry point: {@code java -jar tooling/benchmarks/target/acemq-benchmarks.jar e2e|micro|all [options]}.
 * {@code e2e} runs {@link EndToEndBenchmark} (options documented there); {@code micro} runs the store
 * micro-benchmarks (JMH tryClaim/confirm at 1 and 4 threads for both stores, heap bytes per remembered id), each in
 * its own JVM, and prints a table; {@code all} runs both and writes both tables to one file; {@code fingerprint}
 * times the runtime's fingerprint computation alone ({@link FingerprintCost}); {@code read} times the read stage's
 * work on an encoded message before and after the body-form step, side by side ({@link ReadCost}); {@code sustained}
 * runs 1,000,000 messages through the JDBC store on PostgreSQL with the purge running ({@code SustainedPostgres});
 * {@code ordered} runs the ordered processing mode against the concurrent one, and a hot key ({@code OrderedBenchmark});
 * {@code scaleout} runs 1, 2 and 4 consumer processes on one queue and one shared store ({@code ScaleOutBenchmark}).
 */
public final class BenchmarkMain {

    private BenchmarkMain() {
    }

    /**
     * @param args the command, then its options
     * @throws Exception if a benchmark fails
     */
    public static void main(String[] args) throws Exception {
        EndToEndBenchmark.quietLogging();
        String command = args.length == 0 ? "all" : args[0];
        String[] rest = args.length == 0 ? new String[0] : Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "e2e" -> EndToEndBenchmark.main(rest);
            case "fingerprint" -> FingerprintCost.main(rest);
            case "read" -> ReadCost.main(rest);
            case "sustained" -> org.acemq.amqp.benchmarks.e2e.SustainedPostgres.main(rest);
            case "ordered" -> org.acemq.amqp.benchmarks.e2e.OrderedBenchmark.main(rest);
            case "scaleout" -> org.acemq.amqp.benchmarks.e2e.ScaleOutBenchmark.main(rest);
            case "micro" -> {
                String table = micro(rest);
                System.out.println(table);
                write(Path.of("tooling", "benchmarks", "target", "micro-results.md"), table);
            }
            case "all" -> {
                String micro = micro(new String[0]);
                Path e2eOut = Path.of("tooling", "benchmarks", "target", "e2e-results.md");
                List<String> e2eArgs = new ArrayList<>(Arrays.asList(rest));
                e2eArgs.add("--out");
                e2eArgs.add(e2eOut.toString());
                if (!e2eArgs.contains("--command")) {
                    e2eArgs.add("--command");
                    e2eArgs.add(("tooling/benchmarks/run.sh all " + String.join(" ", rest)).trim());
                }
                int rc = child(List.of(), "org.acemq.amqp.benchmarks.e2e.EndToEndBenchmark", e2eArgs, line -> true,
                        new ArrayList<>(), null);
                if (rc != 0) {
                    throw new IllegalStateException("e2e benchmark failed with exit code " + rc);
                }
                String all = Files.readString(e2eOut) + "\n" + micro;
                write(Path.of("tooling", "benchmarks", "target", "results.md"), all);
                System.out.println(all);
            }
            default -> {
                System.err.println(
                        "usage: java -jar acemq-benchmarks.jar e2e|micro|all|fingerprint|read|sustained|ordered|scaleout [options]");
                System.exit(2);
            }
        }
    }

    private static void write(Path path, String text) throws IOException {
        Files.createDirectories(path.getParent());
        Files.writeString(path, text);
        System.out.println("(written to " + path.toAbsolutePath() + ")");
    }

    /** Runs the store micro-benchmarks, each in a JVM of its own, and returns a Markdown section. */
    static String micro(String[] args) throws Exception {
        boolean postgres = !Arrays.asList(args).contains("--no-postgres");
        StringBuilder sb = new StringBuilder("## Store micro-benchmarks\n\nRun ")
                .append(ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME)).append(" on ")
                .append(BenchEnv.machine()).append("; load average ").append(BenchEnv.loadAverage()).append(".\n\n");

        List<String> heap = new ArrayList<>();
        child(List.of("-Xmx2g", "-XX:+UseParallelGC"), "org.acemq.amqp.benchmarks.store.InMemoryHeapPerId",
                List.of("1000000"), line -> line.contains("bytes/id") || line.startsWith("ids:"), heap, null);
        sb.append("### Heap per remembered id (InMemoryHeapPerId, 1,000,000 UUID ids, ParallelGC)\n\n```\n");
        heap.forEach(l -> sb.append(l).append('\n'));
        sb.append("```\n\n");
        double withKey = heap.stream().filter(l -> l.startsWith("store with key"))
                .mapToDouble(l -> Double.parseDouble(l.replaceAll("[^0-9.]", ""))).findFirst().orElse(Double.NaN);
        sb.append(String.format("Target ≤ 150 bytes per id (with key): %.1f → %s.%n%n", withKey,
                withKey <= 150 ? "**met**" : "not met"));

        List<String> mem = new ArrayList<>();
        // other JMH runs on a shared machine hold /tmp/jmh.lock; the load average is recorded instead
        List<String> jmhJvm = List.of("-Xms1g", "-Xmx2g", "-Djmh.ignoreLock=true");
        child(jmhJvm, "org.acemq.amqp.benchmarks.store.InMemoryStoreBenchmark",
                List.of("-f", "1", "-wi", "2", "-i", "3", "-w", "2s", "-r", "2s"), line -> line.startsWith("threads="),
                mem, null);
        sb.append("### In-memory store, tryClaim + confirm of fresh ids (JMH, -f 1 -wi 2 -i 3 -w 2s -r 2s)\n\n```\n");
        mem.forEach(l -> sb.append(l).append('\n'));
        if (mem.isEmpty()) {
            sb.append("(failed; see the console output)\n");
        }
        sb.append("```\n\n");

        if (postgres) {
            try (BenchEnv.Postgres pg = BenchEnv.Postgres.open(System.getenv("ACEMQ_TEST_JDBC_URL"),
                    System.getenv("ACEMQ_TEST_JDBC_USER"), System.getenv("ACEMQ_TEST_JDBC_PASSWORD"))) {
                List<String> jdbc = new ArrayList<>();
                String[] env = {"ACEMQ_TEST_JDBC_URL=" + pg.url(), "ACEMQ_TEST_JDBC_USER=" + pg.user(),
                    "ACEMQ_TEST_JDBC_PASSWORD=" + (pg.password() == null ? "" : pg.password())};
                child(jmhJvm, "org.acemq.amqp.benchmarks.store.JdbcStoreBenchmark",
                        List.of("-f", "1", "-wi", "1", "-i", "2", "-w", "5s", "-r", "5s", "-p", "preloadRows=100000"),
                        line -> line.startsWith("threads="), jdbc, env);
                sb.append("### JDBC store on ").append(pg.description())
                        .append(" (JMH, -f 1 -wi 1 -i 2 -w 5s -r 5s, 100,000 rows pre-loaded, pool 4)\n\n```\n");
                jdbc.forEach(l -> sb.append(l).append('\n'));
                if (jdbc.isEmpty()) {
                    sb.append("(failed; see the console output)\n");
                }
                sb.append("```\n\n");

                List<String> batches = new ArrayList<>();
                child(List.of("-Xms1g", "-Xmx2g"), "org.acemq.amqp.benchmarks.store.GroupCommitProbe",
                        List.of("--modes", "single,batch:1,batch:10,batch:50,batch:100", "--threads", "4", "--pool",
                                "8", "--seconds", "5", "--warmup-seconds", "2", "--jdbc-url", pg.url(), "--jdbc-user",
                                pg.user() == null ? "" : pg.user(), "--jdbc-password",
                                pg.password() == null ? "" : pg.password()),
                        line -> line.startsWith("|"), batches, null);
                sb.append("### JDBC store, batch calls against single statements on ").append(pg.description())
                        .append(" (GroupCommitProbe, 4 threads, pool 8, 2 s warm-up, 5 s per row)\n\n");
                batches.forEach(l -> sb.append(l).append('\n'));
                if (batches.isEmpty()) {
                    sb.append("(failed; see the console output)\n");
                }
                sb.append('\n');
            }
        }
        return sb.toString();
    }

    /** Runs a main class of this classpath in a new JVM; lines that match go to {@code kept}; all are echoed. */
    static int child(List<String> jvm, String mainClass, List<String> args, Predicate<String> keep, List<String> kept,
                     String[] env) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(BenchEnv.javaCommand());
        cmd.addAll(jvm);
        if (jvm.isEmpty()) {
            cmd.addAll(List.of("-Xms1g", "-Xmx2g"));
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (env != null) {
            for (String e : env) {
                int eq = e.indexOf('=');
                pb.environment().put(e.substring(0, eq), e.substring(eq + 1));
            }
        }
        Process p = pb.start();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                System.out.println(line);
                if (keep.test(line)) {
                    kept.add(line);
                }
            }
        }
        return p.waitFor();
    }
}

package org.acemq.amqp.benchmarks.store;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * One message through {@link InMemoryIdempotencyStore}, the way the runtime does it ({@code acquire} of a fresh id, then
 * {@code confirm(Claim)}) and the way the seed contract does it ({@code tryClaim}, then {@code confirm(String)}), and
 * {@value #BATCH} messages through the batch calls ({@code acquireAll} + {@code confirmAll}), against a
 * <b>baseline measured in the same run</b>: the least any in-memory de-duplication must do per message, a
 * {@code ConcurrentHashMap.putIfAbsent} of the id and a {@code replace} of its value. The score is messages per second
 * (all threads together); the summary gives each store path as a ratio to the baseline, which is what to compare
 * between runs on a noisy machine.
 *
 * <p>Every id is new: a random 27-character prefix per thread and a counter, about as long as a UUID string and cheaper
 * to make; {@link #idOnly} measures making one, the same for every path. Every trial starts from an empty store; {@link #maxEntries} selects the bound: with the default bound (1,000,000) the store fills up
 * within seconds and the steady state includes the amortised cost of evicting the oldest confirmations in batches;
 * with {@code unbounded} the map grows like the baseline's.
 *
 * <pre>
 * mvn -B -o -q -pl tooling/benchmarks -am package -DskipTests
 * java -cp tooling/benchmarks/target/acemq-benchmarks.jar org.acemq.amqp.benchmarks.store.InMemoryStoreBenchmark \
 *      -f 1 -wi 2 -i 3 -w 2s -r 2s      # 1 and 4 threads; any JMH options work too, e.g. -p maxEntries=unbounded
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
public class InMemoryStoreBenchmark {

    /** Messages per batch call in {@link #acquireAllConfirmAll}. */
    public static final int BATCH = 16;

    /** {@code default} for {@link InMemoryIdempotencyStore#DEFAULT_MAX_ENTRIES}, or {@code unbounded}. */
    @Param({"default", "unbounded"})
    public String maxEntries;

    private InMemoryIdempotencyStore store;
    private ConcurrentHashMap<String, Object> baseline;

    /** Each thread's source of new ids. */
    @State(Scope.Thread)
    public static class Ids {
        private final String prefix = UUID.randomUUID().toString().substring(0, 26) + "-";
        private long next;

        String next() {
            return prefix + next++;
        }
    }

    /** Builds a store and a baseline map over empty state for every trial. */
    @Setup(Level.Trial)
    public void createStore() {
        long bound = "unbounded".equals(maxEntries)
                ? InMemoryIdempotencyStore.UNBOUNDED
                : InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES;
        store = InMemoryIdempotencyStore.builder().maxEntries(bound).build();
        baseline = new ConcurrentHashMap<>();
    }


    /**
     * One message as the runtime does it: acquire a new id, confirm the claim.
     *
     * @param ids the thread's ids
     * @return whether the lease was held, so that the work cannot be optimised away
     */
    @Benchmark
    public boolean acquireAndConfirmClaim(Ids ids) {
        return store.confirm(store.acquire(ids.next()));
    }

    /**
     * One message as the seed contract does it: claim a new id, confirm it.
     *
     * @param ids the thread's ids
     * @return the claim result, so that the work cannot be optimised away
     */
    @Benchmark
    public ClaimResult claimAndConfirm(Ids ids) {
        String id = ids.next();
        ClaimResult result = store.tryClaim(id);
        store.confirm(id);
        return result;
    }

    /**
     * {@value #BATCH} messages through the batch calls (the score counts messages).
     *
     * @param ids the thread's ids
     * @return the lost claims, so that the work cannot be optimised away
     */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public List<Claim> acquireAllConfirmAll(Ids ids) {
        String[] batch = new String[BATCH];
        for (int i = 0; i < BATCH; i++) {
            batch[i] = ids.next();
        }
        return store.confirmAll(store.acquireAll(Arrays.asList(batch)));
    }

    /**
     * The baseline: the least an in-memory de-duplication does for one message.
     *
     * @param ids the thread's ids
     * @return the previous value, so that the work cannot be optimised away
     */
    @Benchmark
    public Object baseline(Ids ids) {
        String id = ids.next();
        Object previous = baseline.putIfAbsent(id, Boolean.FALSE);
        baseline.replace(id, Boolean.TRUE);
        return previous;
    }

    /**
     * Making one id, the part of every path that is not the store.
     *
     * @param ids the thread's ids
     * @return the id
     */
    @Benchmark
    public String idOnly(Ids ids) {
        return ids.next();
    }

    /**
     * Runs every benchmark at 1 and 4 threads (unless {@code -t} is given) and prints a summary in messages per
     * second, with each store path as a ratio to the baseline of the same run. Other JMH options are passed through.
     *
     * @param args JMH command-line options
     * @throws RunnerException if JMH fails
     * @throws CommandLineOptionException if the options do not parse
     */
    public static void main(String[] args) throws RunnerException, CommandLineOptionException {
        CommandLineOptions cli = new CommandLineOptions(args);
        int[] threadCounts = cli.getThreads().hasValue() ? new int[] {cli.getThreads().get()} : new int[] {1, 4};
        StringBuilder summary = new StringBuilder();
        for (int threads : threadCounts) {
            ChainedOptionsBuilder options = new OptionsBuilder().parent(cli)
                    .include(InMemoryStoreBenchmark.class.getName() + ".").threads(threads);
            Map<String, Double> baselines = new HashMap<>();
            List<RunResult> results = new ArrayList<>(new Runner(options.build()).run());
            for (RunResult result : results) {
                if (result.getParams().getBenchmark().endsWith(".baseline")) {
                    baselines.put(result.getParams().getParam("maxEntries"), result.getPrimaryResult().getScore());
                }
            }
            for (RunResult result : results) {
                String bound = result.getParams().getParam("maxEntries");
                double score = result.getPrimaryResult().getScore();
                Double base = baselines.get(bound);
                summary.append(String.format(Locale.ROOT, "threads=%d %-22s %-9s: %,10.0f msg/s (± %,.0f)%s%n",
                        threads, result.getParams().getBenchmark().replaceFirst(".*\\.", ""), bound, score,
                        result.getPrimaryResult().getScoreError(),
                        base == null ? "" : String.format(Locale.ROOT, "  %.2f of the baseline, %.0f ns/msg",
                                score / base, 1e9 * threads / score)));
            }
        }
        System.out.print(summary);
    }
}

package org.acemq.amqp.benchmarks.store;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
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
 * One message through {@link InMemoryIdempotencyStore}: {@code tryClaim} of a fresh random UUID id, then
 * {@code confirm}. The score is messages per second (all threads together).
 *
 * <p>{@link #maxEntries} selects the bound: with the default bound (1,000,000) the store fills up within the first
 * seconds and the steady state includes the amortised cost of evicting the oldest confirmations in batches; with
 * {@code unbounded} the map only grows (give the JVM heap for it). {@link #idOnly} measures making the id alone, to
 * subtract.
 *
 * <pre>
 * mvn -B -o -q -pl benchmarks -am package -DskipTests
 * mvn -B -o -q -pl benchmarks dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 * java -cp benchmarks/target/classes:$(cat benchmarks/target/classpath.txt) \
 *   org.acemq.amqp.benchmarks.store.InMemoryStoreBenchmark      # 1 and 4 threads; any JMH options work too
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
public class InMemoryStoreBenchmark {

    /** {@code default} for {@link InMemoryIdempotencyStore#DEFAULT_MAX_ENTRIES}, or {@code unbounded}. */
    @Param({"default", "unbounded"})
    public String maxEntries;

    private InMemoryIdempotencyStore store;

    /** Builds a store over empty state for every trial. */
    @Setup(Level.Trial)
    public void createStore() {
        long bound = "unbounded".equals(maxEntries)
                ? InMemoryIdempotencyStore.UNBOUNDED
                : InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES;
        store = InMemoryIdempotencyStore.builder().maxEntries(bound).build();
    }

    /**
     * One message: claim a new id, confirm it.
     *
     * @return the claim result, so that the work cannot be optimised away
     */
    @Benchmark
    public ClaimResult claimAndConfirm() {
        String id = freshId();
        ClaimResult result = store.tryClaim(id);
        store.confirm(id);
        return result;
    }

    /** @return a fresh id only, the part of {@link #claimAndConfirm} that is not the store */
    @Benchmark
    public String idOnly() {
        return freshId();
    }

    private static String freshId() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        return new UUID(random.nextLong(), random.nextLong()).toString();
    }

    /**
     * Runs {@link #claimAndConfirm} and {@link #idOnly} at 1 and 4 threads (unless {@code -t} is given) and prints a
     * summary in messages per second. Other JMH command-line options are passed through.
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
            for (RunResult result : new Runner(options.build()).run()) {
                summary.append(String.format("threads=%d %s %s: %.0f ops/s (± %.0f)%n", threads,
                        result.getParams().getBenchmark().replaceFirst(".*\\.", ""),
                        result.getParams().getParam("maxEntries"),
                        result.getPrimaryResult().getScore(), result.getPrimaryResult().getScoreError()));
            }
        }
        System.out.print(summary);
    }
}

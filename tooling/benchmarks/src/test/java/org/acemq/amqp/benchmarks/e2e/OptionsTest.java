package org.acemq.amqp.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class OptionsTest {

    private static EndToEndBenchmark.Options parse(String... args) {
        return EndToEndBenchmark.Options.parse(args);
    }

    @Test
    void defaultsAreTheStoreComparisonRun() {
        EndToEndBenchmark.Options o = parse();
        assertThat(o.durability).containsExactly("durable", "non-durable");
        assertThat(o.messages).isEqualTo(100_000);
        assertThat(o.pgMessages).isEqualTo(20_000);
        assertThat(o.rounds).isEqualTo(3);
        assertThat(o.pgTunedThreads).isEqualTo(64);
        assertThat(o.command).isEqualTo("tooling/benchmarks/run.sh e2e");
    }

    @Test
    void durabilityRunsTheDurablePhaseFirstWhateverTheOrderGiven() {
        assertThat(parse("--durability", "non-durable,durable").durability).containsExactly("durable", "non-durable");
        assertThat(parse("--durability", "durable").durability).containsExactly("durable");
    }

    @Test
    void badValuesNameTheOptionAndTheValue() {
        assertThatThrownBy(() -> parse("--durability", "fast")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--durability takes durable, non-durable or both, but was fast");
        assertThatThrownBy(() -> parse("--rounds", "0")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--rounds must be >= 1, but was 0");
        assertThatThrownBy(() -> parse("--pg-tuned-group-commit", "128")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--pg-tuned-group-commit takes default, on, off or maxBatch,maxInFlight, but was 128");
        assertThatThrownBy(() -> parse("--modes", "memory-x")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown mode memory-x");
        assertThatThrownBy(() -> parse("--fingerprint", "sometimes")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--fingerprint takes on, off or both, but was sometimes");
        assertThatThrownBy(() -> parse("--fast")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("missing value for --fast");
        assertThatThrownBy(() -> parse("--fast", "1")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown option --fast");
    }

    @Test
    void theCommandLineIsReportedAsGiven() {
        assertThat(parse("--durability", "durable", "--modes", "spring").command)
                .isEqualTo("tooling/benchmarks/run.sh e2e --durability durable --modes spring");
    }

    @Test
    void groupCommitSettingsDescribeThemselves() {
        assertThat(EndToEndBenchmark.GroupCommit.parse("default").describe()).isEqualTo("store defaults");
        assertThat(EndToEndBenchmark.GroupCommit.parse("128,4").describe()).isEqualTo("`groupCommit(128, 4)`");
        assertThat(EndToEndBenchmark.GroupCommit.parse("off").describe()).isEqualTo("`groupCommit(false)`");
    }

    @Test
    void fingerprintSettingsApplyToTheAceMqRowsOfEveryPhase() {
        EndToEndBenchmark.Options o = parse("--modes", "memory-4,spring-1", "--fingerprint", "on,off");
        assertThat(o.fingerprint).containsExactly("on", "off");
        assertThat(o.modes(true)).containsExactly("raw", "raw-pool4", "memory-4", "memory-fp-off-4", "spring-1");
        assertThat(o.modes(false)).containsExactly("raw", "raw-pool4", "memory-4", "memory-fp-off-4", "spring-1");
        assertThat(parse().fingerprint).isNull();
        assertThat(parse().modes(false)).containsExactly("raw", "raw-pool4", "memory-1", "memory-4", "spring-1",
                "spring-4");
    }

    @Test
    void fingerprintComparisonPairsTheRoundsOfEachTwin() {
        EndToEndBenchmark b = new EndToEndBenchmark(parse("--modes", "memory-4", "--fingerprint", "on,off"));
        EndToEndBenchmark.Phase phase = new EndToEndBenchmark.Phase(true, List.of());
        // rates in msg/s: 1e9 ns for n messages is n msg/s
        phase.samples.put("raw-pool4", List.of(sample("raw-pool4", 100), sample("raw-pool4", 100),
                sample("raw-pool4", 100)));
        phase.samples.put("memory-4", List.of(sample("memory-4", 90), sample("memory-4", 80), sample("memory-4", 99)));
        phase.samples.put("memory-fp-off-4", List.of(sample("memory-fp-off-4", 100), sample("memory-fp-off-4", 100),
                sample("memory-fp-off-4", 90)));
        String text = b.fingerprintComparison(phase);
        assertThat(text).contains("| `memory-4` / `memory-fp-off-4` | 90 | 0.90 | 100 | 1.00 | **0.90** "
                + "| 0.90 0.80 1.10 | 0.30 |");
        phase.samples.remove("memory-fp-off-4");
        assertThat(b.fingerprintComparison(phase)).isEmpty();
    }

    @Test
    void sendingComparisonSetsEachSendingRowAgainstItsConsumeOnlyTwin() {
        EndToEndBenchmark b = new EndToEndBenchmark(parse("--modes", "send"));
        EndToEndBenchmark.Phase phase = new EndToEndBenchmark.Phase(true, List.of());
        phase.samples.put("postgres-tx-4", List.of(sample("postgres-tx-4", 100, 100), sample("postgres-tx-4", 120, 120)));
        phase.samples.put("postgres-tx-send-4", List.of(sample("postgres-tx-send-4", 60, 65),
                sample("postgres-tx-send-4", 60, 60)));
        phase.sent.put("postgres-tx-send-4", new long[] {2, 120, 120, 0});
        String text = b.sendingComparison(phase);
        // medians: 110 against 60 msg/s; commits 1.0000 against 1.0417 per message, more than the two commits per
        // measurement (2/60) the comparison allows: the rate is met, the commits not
        assertThat(text).contains("| `postgres-tx-send-4` / `postgres-tx-4` | 60 | 110 | **0.55** | 0.60 0.50 "
                + "| 1.0417 / 1.0000 |");
        assertThat(text).contains("| 120, 120, 0 | not met |");
        phase.samples.put("postgres-tx-send-4", List.of(sample("postgres-tx-send-4", 60, 61),
                sample("postgres-tx-send-4", 60, 60)));
        assertThat(b.sendingComparison(phase)).as("one commit more in a measurement: within the two allowed")
                .contains("| 1.0083 / 1.0000 |").contains("| **met** |");
        phase.samples.put("postgres-tx-send-4", List.of(sample("postgres-tx-send-4", 60, 60),
                sample("postgres-tx-send-4", 60, 60)));
        assertThat(b.sendingComparison(phase)).contains("| **0.55** |").contains("| 1.0000 / 1.0000 |")
                .contains("| **met** |");
        phase.samples.put("postgres-tx-send-4", List.of(sample("postgres-tx-send-4", 50, 50),
                sample("postgres-tx-send-4", 50, 50)));
        assertThat(b.sendingComparison(phase)).contains("| **0.45** |").contains("| not met |");
        phase.samples.remove("postgres-tx-4");
        assertThat(b.sendingComparison(phase)).isEmpty();
    }

    /** A sample of {@code messages} in one second with {@code commits} commits. */
    private static Sample sample(String mode, int messages, long commits) {
        return sample(mode, messages).withCommits(commits);
    }

    private static Sample sample(String mode, int messages) {
        BenchEnv.Sched none = new BenchEnv.Sched(0, 0, 0);
        return new Sample(mode, 4, messages, 1_000_000_000L, messages * 1_000L, 0, none, none, -1, -1, -1);
    }
}

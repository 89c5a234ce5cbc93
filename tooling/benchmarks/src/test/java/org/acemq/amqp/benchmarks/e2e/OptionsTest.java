package org.acemq.amqp.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class OptionsTest {

    private static EndToEndBenchmark.Options parse(String... args) {
        return EndToEndBenchmark.Options.parse(args);
    }

    @Test
    void defaultsAreTheIssue13Run() {
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
}

package org.acemq.amqp.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

class ScaleOutTest {

    private static ScaleOutBenchmark.Options parse(String... args) {
        return ScaleOutBenchmark.Options.parse(args);
    }

    private static BitSet range(int from, int to) {
        BitSet b = new BitSet();
        b.set(from, to);
        return b;
    }

    private static ScaleOutBenchmark.ChildResult child(BitSet ids) {
        return new ScaleOutBenchmark.ChildResult(ids.cardinality(), ids.cardinality(), 0, 0, 0, ids);
    }

    @Test
    void defaultsAreEveryShareableStoreAtOneTwoAndFourProcesses() {
        ScaleOutBenchmark.Options o = parse();
        assertThat(o.stores).containsExactly("postgres", "mariadb", "redis", "redis-cluster");
        assertThat(o.processes).containsExactly(1, 2, 4);
        assertThat(o.messages("mariadb")).isEqualTo(20_000);
        assertThat(o.threads).isEqualTo(4);
        assertThat(o.command).isEqualTo("tooling/benchmarks/run.sh scaleout");
    }

    @Test
    void messagesTakeOneCountOrOnePerStore() {
        ScaleOutBenchmark.Options o = parse("--messages", "postgres=30000,mariadb=5000");
        assertThat(o.messages("postgres")).isEqualTo(30_000);
        assertThat(o.messages("mariadb")).isEqualTo(5_000);
        assertThat(o.messages("redis")).isEqualTo(20_000);
        assertThat(parse("--messages", "7000").messages("redis-cluster")).isEqualTo(7_000);
    }

    @Test
    void badValuesNameTheOptionAndTheValue() {
        assertThatThrownBy(() -> parse("--stores", "memory")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("in-memory store cannot be shared between processes");
        assertThatThrownBy(() -> parse("--stores", "h2")).hasMessageContaining("unknown store h2");
        assertThatThrownBy(() -> parse("--processes", "2,4")).hasMessageContaining("must include 1");
        assertThatThrownBy(() -> parse("--processes", "1,0")).hasMessage("--processes must be >= 1, but was 0");
        assertThatThrownBy(() -> parse("--messages", "redis=0")).hasMessage("--messages must be >= 1, but was 0");
        assertThatThrownBy(() -> parse("--rounds")).hasMessage("missing value for --rounds");
    }

    @Test
    void theConsumersResultLineReadsBackAsWritten() {
        BitSet ids = new BitSet();
        ids.set(0);
        ids.set(17);
        ids.set(19_999);
        String line = ScaleOutConsumerMain.resultLine(3, 4, 1, 2, 1_765_000_000_123_456L, ids);
        ScaleOutBenchmark.ChildResult r = ScaleOutBenchmark.ChildResult.parse(line);
        assertThat(r).isEqualTo(new ScaleOutBenchmark.ChildResult(3, 4, 1, 2, 1_765_000_000_123_456L, ids));
    }

    @Test
    void verifyAcceptsEachMessageHandledOnceAcrossProcesses() {
        assertThatCode(() -> ScaleOutBenchmark.verify("x", 100, List.of(child(range(0, 40)), child(range(40, 100)))))
                .doesNotThrowAnyException();
    }

    @Test
    void verifyFailsWhenTwoProcessesHandledTheSameMessage() {
        assertThatThrownBy(() -> ScaleOutBenchmark.verify("redis, 2 processes", 100,
                List.of(child(range(0, 41)), child(range(40, 100)))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("redis, 2 processes: 1 messages were handled by two consumer processes (the shared store "
                        + "let a duplicate through)");
    }

    @Test
    void verifyFailsWhenAMessageWasMissedOrHandledTwiceInOneProcessOrSettledOtherwise() {
        assertThatThrownBy(() -> ScaleOutBenchmark.verify("x", 100, List.of(child(range(0, 99)))))
                .hasMessageContaining("99 distinct messages handled");
        BitSet all = range(0, 100);
        assertThatThrownBy(() -> ScaleOutBenchmark.verify("x", 100,
                List.of(new ScaleOutBenchmark.ChildResult(100, 101, 0, 1, 0, all))))
                .hasMessage("x: consumer process 0 handled 1 messages twice");
        assertThatThrownBy(() -> ScaleOutBenchmark.verify("x", 100,
                List.of(new ScaleOutBenchmark.ChildResult(100, 100, 2, 0, 0, all))))
                .hasMessageContaining("settled 2 deliveries otherwise than accepted as processed");
        assertThatThrownBy(() -> ScaleOutBenchmark.verify("x", 100,
                List.of(new ScaleOutBenchmark.ChildResult(99, 100, 0, 0, 0, all))))
                .hasMessageContaining("99 settled as processed");
    }

    @Test
    void medianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
        assertThat(ScaleOutBenchmark.median(new double[] {4, 1, 3})).isEqualTo(3);
        assertThat(ScaleOutBenchmark.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
        assertThat(ScaleOutBenchmark.median(new double[0])).isNaN();
    }
}

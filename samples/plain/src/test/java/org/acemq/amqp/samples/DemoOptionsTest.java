package org.acemq.amqp.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DemoOptionsTest {

    @Test
    void noArgumentsGiveTheDocumentedDefaults() {
        DemoOptions o = DemoOptions.parse();
        assertThat(o.help()).isFalse();
        assertThat(o.messages()).isEqualTo(20_000);
        assertThat(o.duplicates()).isEqualTo(0.05);
        assertThat(o.transientFailures()).isEqualTo(0.02);
        assertThat(o.poison()).isEqualTo(5);
        assertThat(o.concurrency()).isEqualTo(8);
        assertThat(o.maxAttempts()).isEqualTo(5);
        assertThat(o.externalBroker()).isFalse();
        assertThat(o.jdbc()).isFalse();
        assertThat(o.timeout()).isEqualTo(Duration.ofSeconds(120));
        assertThat(o.prometheus()).isFalse();
        assertThat(o.prometheusHold()).isEqualTo(Duration.ZERO);
        assertThat(o.work()).isEqualTo(Duration.ZERO);
    }

    @Test
    void simulatedWorkPerOrder() {
        assertThat(DemoOptions.parse("--work", "5").work()).isEqualTo(Duration.ofMillis(5));
        assertThatThrownBy(() -> DemoOptions.parse("--work", "-1"))
                .isInstanceOf(DemoOptions.UsageException.class)
                .hasMessage("--work must be between 0 and 60000, but was -1");
    }

    @Test
    void prometheusOptions() {
        DemoOptions o = DemoOptions.parse("--prometheus-port", "0", "--prometheus-hold=15");
        assertThat(o.prometheus()).isTrue();
        assertThat(o.prometheusPort()).isZero();
        assertThat(o.prometheusHold()).isEqualTo(Duration.ofSeconds(15));
        assertThatThrownBy(() -> DemoOptions.parse("--prometheus-hold", "5"))
                .isInstanceOf(DemoOptions.UsageException.class)
                .hasMessage("--prometheus-hold needs --prometheus-port");
        assertThatThrownBy(() -> DemoOptions.parse("--prometheus-port", "70000"))
                .isInstanceOf(DemoOptions.UsageException.class)
                .hasMessage("--prometheus-port must be between 0 and 65535, but was 70000");
    }

    @Test
    void parsesEveryOptionInBothSpellings() {
        DemoOptions o = DemoOptions.parse("--messages", "1_000", "--duplicates=0.1", "--transient-failures", "3%",
                "--poison=2", "--concurrency", "4", "--max-attempts", "3", "--broker", "mq.example:5673",
                "--user", "app", "--password=s=cret", "--queue", "q1", "--dlq", "dead", "--jdbc-url",
                "jdbc:postgresql://db/x", "--jdbc-user", "u", "--jdbc-password", "p", "--timeout", "30",
                "--seed", "7");
        assertThat(o.messages()).isEqualTo(1_000);
        assertThat(o.duplicates()).isEqualTo(0.1);
        assertThat(o.transientFailures()).isEqualTo(0.03);
        assertThat(o.poison()).isEqualTo(2);
        assertThat(o.concurrency()).isEqualTo(4);
        assertThat(o.maxAttempts()).isEqualTo(3);
        assertThat(o.brokerHost()).isEqualTo("mq.example");
        assertThat(o.brokerPort()).isEqualTo(5673);
        assertThat(o.user()).isEqualTo("app");
        assertThat(o.password()).isEqualTo("s=cret");
        assertThat(o.queue()).isEqualTo("q1");
        assertThat(o.dlq()).isEqualTo("dead");
        assertThat(o.jdbcUrl()).isEqualTo("jdbc:postgresql://db/x");
        assertThat(o.jdbcUser()).isEqualTo("u");
        assertThat(o.jdbcPassword()).isEqualTo("p");
        assertThat(o.timeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(o.seed()).isEqualTo(7);
        assertThat(o.toString()).doesNotContain("s=cret").doesNotContain("jdbc:postgresql");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "--messages 0                          | --messages must be between 1",
            "--messages many                       | --messages must be a whole number",
            "--duplicates 1.5                      | --duplicates must be between 0 and 1",
            "--duplicates lots                     | --duplicates must be a fraction",
            "--transient-failures -0.1             | --transient-failures must be between 0 and 1",
            "--concurrency 0                       | --concurrency must be between 1",
            "--poison 11 --messages 10             | --poison (11) must not exceed --messages (10)",
            "--broker localhost                    | --broker must be HOST:PORT",
            "--broker localhost:99999              | --broker port must be between 1 and 65535",
            "--user app                            | --user and --password go together",
            "--user app --password pw              | --user/--password need --broker",
            "--jdbc-user u                         | --jdbc-user/--jdbc-password need --jdbc-url",
            "--jdbc-url postgres://db              | --jdbc-url must start with jdbc:",
            "--max-attempts 1                      | --transient-failures needs --max-attempts of at least 2",
            "--frobnicate 1                        | unknown option '--frobnicate'",
            "extra                                 | unexpected argument 'extra'",
            "--messages                            | --messages needs a value",
    })
    void badArgumentsAreRejectedWithAMessage(String commandLine, String message) {
        assertThatThrownBy(() -> DemoOptions.parse(commandLine.trim().split("\\s+")))
                .isInstanceOf(DemoOptions.UsageException.class)
                .hasMessageContaining(message);
    }

    @Test
    void maxAttemptsOfOneIsFineWithoutTransientFailures() {
        assertThat(DemoOptions.parse("--max-attempts", "1", "--transient-failures", "0").maxAttempts()).isEqualTo(1);
    }

    @Test
    void badArgumentsExitWithStatusTwoAndPrintTheProblemAndTheUsage() {
        Captured c = run("--messages", "-5");
        assertThat(c.status).isEqualTo(OrdersDemo.EXIT_USAGE);
        assertThat(c.err).contains("error: --messages must be between 1 and 10000000, but was -5")
                .contains("Usage: java -jar samples/plain/target/acemq-samples.jar");
        assertThat(c.out).isEmpty();
    }

    @Test
    void helpPrintsTheUsageAndExitsWithZeroWithoutRunning() {
        Captured c = run("--messages", "10", "--help");
        assertThat(c.status).isEqualTo(OrdersDemo.EXIT_PASS);
        assertThat(c.out).contains("Usage:").contains("--jdbc-url URL").contains("Exit status: 0 PASS");
        assertThat(c.err).isEmpty();
    }

    private static Captured run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = OrdersDemo.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), false);
        return new Captured(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private record Captured(int status, String out, String err) {
    }
}

package org.acemq.amqp.samples.twoservices;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TwoServicesOptionsTest {

    @Test
    void defaults() {
        TwoServicesOptions o = TwoServicesOptions.parse();
        assertThat(o.orders()).isEqualTo(2_000);
        assertThat(o.duplicates()).isEqualTo(0.05);
        assertThat(o.newIdRetries()).isEqualTo(0.03);
        assertThat(o.concurrency()).isEqualTo(4);
        assertThat(o.externalBroker()).isFalse();
        assertThat(o.jdbcUrl()).isNull();
        assertThat(o.timeout()).isEqualTo(Duration.ofSeconds(120));
    }

    @Test
    void everyOptionInBothSpellings() {
        TwoServicesOptions o = TwoServicesOptions.parse("--orders", "300", "--duplicates=10%",
                "--new-id-retries", "0.2", "--concurrency=2", "--seed", "5", "--timeout=30", "--broker",
                "mq:5673", "--user", "u", "--password=p", "--jdbc-url", "jdbc:postgresql://db/app",
                "--jdbc-user=app", "--jdbc-password", "s");
        assertThat(o.orders()).isEqualTo(300);
        assertThat(o.duplicates()).isEqualTo(0.1);
        assertThat(o.newIdRetries()).isEqualTo(0.2);
        assertThat(o.concurrency()).isEqualTo(2);
        assertThat(o.seed()).isEqualTo(5);
        assertThat(o.timeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(o.brokerHost()).isEqualTo("mq");
        assertThat(o.brokerPort()).isEqualTo(5673);
        assertThat(o.user()).isEqualTo("u");
        assertThat(o.password()).isEqualTo("p");
        assertThat(o.jdbcUrl()).isEqualTo("jdbc:postgresql://db/app");
        assertThat(o.jdbcUser()).isEqualTo("app");
        assertThat(o.jdbcPassword()).isEqualTo("s");
        assertThat(o.toString()).doesNotContain("=p,").doesNotContain("s]");
    }

    @Test
    void badArgumentsNameWhatIsWrong() {
        assertThatThrownBy(() -> TwoServicesOptions.parse("--orders", "0"))
                .hasMessage("--orders must be between 1 and 10000000, but was 0");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--duplicates", "2"))
                .hasMessage("--duplicates must be between 0 and 1, but was 2");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--broker", "mq"))
                .hasMessage("--broker must be HOST:PORT, but was 'mq'");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--jdbc-url", "jdbc:mariadb://db/app"))
                .hasMessageStartingWith("--jdbc-url must be a PostgreSQL URL");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--user", "u", "--password", "p"))
                .hasMessageContaining("need --broker");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--jdbc-user", "u"))
                .hasMessage("--jdbc-user/--jdbc-password need --jdbc-url");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--orders"))
                .hasMessage("--orders needs a value");
        assertThatThrownBy(() -> TwoServicesOptions.parse("--nope", "1"))
                .hasMessage("unknown option '--nope'");
        assertThatThrownBy(() -> TwoServicesOptions.parse("orders"))
                .hasMessage("unexpected argument 'orders'");
    }

    @Test
    void badArgumentsExitWithTwoAndTheUsageHelpWithZero() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertThat(TwoServicesDemo.run(new String[] {"--orders", "x"}, print(out), print(err)))
                .isEqualTo(TwoServicesDemo.EXIT_USAGE);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("error: --orders must be a whole number")
                .contains("Usage: java -jar samples/two-services/target/acemq-samples-two-services.jar");
        assertThat(TwoServicesDemo.run(new String[] {"--help"}, print(out), print(err)))
                .isEqualTo(TwoServicesDemo.EXIT_PASS);
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("--new-id-retries FRACTION");
    }

    private static PrintStream print(ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }
}

package org.acemq.amqp.samples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresExtension;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** Runs the demo in this JVM, end to end, with small workloads: embedded Artemis, in-memory and PostgreSQL store. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class OrdersDemoIT {

    @Test
    void smallWorkloadOnTheEmbeddedBrokerPassesWithExactCounts() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        DemoOptions options = DemoOptions.parse("--messages", "500", "--duplicates", "0.1",
                "--transient-failures", "0.05", "--poison", "3", "--concurrency", "4", "--max-attempts", "3",
                "--timeout", "60");

        DemoResult r = OrdersDemo.execute(options, print(out), print(err), false);

        String summary = out.toString(StandardCharsets.UTF_8);
        assertThat(r.pass()).as(summary).isTrue();
        assertThat(r.published()).isEqualTo(550);
        assertThat(r.exactlyOnce()).isEqualTo(497);
        assertThat(r.duplicatesAbsorbed()).isEqualTo(50);
        assertThat(r.retried()).isEqualTo(25 + 3 * 2); // transient failures, plus poison retried until attempt 3
        assertThat(r.expectedRetried()).isEqualTo(31);
        assertThat(r.deadLettered()).isEqualTo(3);
        assertThat(r.lost()).isZero();
        assertThat(r.processedTwice()).isZero();
        assertThat(r.settled()).isEqualTo(550);
        assertThat(summary)
                .contains("AceMQ consumer demo: 500 orders (+50 duplicates, 25 transient failures, 3 poison) at "
                        + "concurrency 4")
                .containsPattern("processed exactly once\\s+497\\s+497")
                .containsPattern("lost\\s+0\\s+0")
                .contains("VERDICT: PASS - every order processed exactly once, poison dead-lettered")
                .doesNotContain("differs");
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("published 550 messages to orders")
                .contains("550/550 settled: 497 applied, 50 dup, 31 retried, 3 DLQ");
    }

    @Test
    void mainLogicReturnsZeroOnPass() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = OrdersDemo.run(new String[] {"--messages", "200", "--poison", "1"}, print(out),
                print(new ByteArrayOutputStream()), false);
        assertThat(status).as(out.toString(StandardCharsets.UTF_8)).isEqualTo(OrdersDemo.EXIT_PASS);
    }

    @Test
    void externalBrokerWithCredentialsPasses() {
        try (EmbeddedArtemis broker = EmbeddedArtemis.builder().maxDeliveryAttempts(10)
                .requireCredentials("demo", "demo-secret").build().start()) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int status = OrdersDemo.run(new String[] {"--broker", "127.0.0.1:" + broker.port(), "--user", "demo",
                    "--password", "demo-secret", "--queue", "shop.orders", "--dlq", "DLQ.shop.orders",
                    "--messages", "300", "--poison", "2", "--concurrency", "2"}, print(out), print(err), false);

            String summary = out.toString(StandardCharsets.UTF_8);
            assertThat(status).as(summary + err).isEqualTo(OrdersDemo.EXIT_PASS);
            assertThat(summary).contains("broker 127.0.0.1:" + broker.port() + ", queue shop.orders, DLQ DLQ.shop.orders")
                    .containsPattern("dead-lettered \\(poison\\)\\s+2\\s+2");
            // the demo only browses the dead-letter queue: the poison stays there for inspection
            assertThat(broker.messageCount("DLQ.shop.orders")).isEqualTo(2);
        }
    }

    @Test
    void unreachableBrokerFailsWithStatusOneAndAClearMessage() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = OrdersDemo.run(new String[] {"--broker", "127.0.0.1:1", "--messages", "10"},
                print(new ByteArrayOutputStream()), print(err), false);
        assertThat(status).isEqualTo(OrdersDemo.EXIT_FAIL);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("VERDICT: FAIL - the demo could not run");
    }

    @Test
    @ExtendWith(PostgresExtension.class) // a schema of its own on the PostgreSQL the tests find, dropped afterwards
    void postgresStoreViaJdbcUrlPasses(PostgresSchema schema) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String[] args = schema.user() == null
                ? new String[] {"--jdbc-url", schema.jdbcUrl()}
                : new String[] {"--jdbc-url", schema.jdbcUrl(), "--jdbc-user", schema.user(),
                        "--jdbc-password", schema.password() == null ? "" : schema.password()};
        DemoOptions options = DemoOptions.parse(concat(args, "--messages", "300", "--duplicates", "0.1",
                "--transient-failures", "0.05", "--poison", "2", "--concurrency", "4", "--timeout", "90"));

        DemoResult r = OrdersDemo.execute(options, print(out), print(new ByteArrayOutputStream()), false);

        String summary = out.toString(StandardCharsets.UTF_8);
        assertThat(r.pass()).as(summary).isTrue();
        assertThat(r.exactlyOnce()).isEqualTo(298);
        assertThat(r.duplicatesAbsorbed()).isEqualTo(30);
        assertThat(r.deadLettered()).isEqualTo(2);
        assertThat(summary).contains("store: PostgreSQL (table acemq_idempotency)");
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = new String[a.length + b.length];
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    private static PrintStream print(ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }
}

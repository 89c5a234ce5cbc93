package org.acemq.amqp.samples.twoservices;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Runs the demo in this JVM, end to end, with small workloads: embedded Artemis and the PostgreSQL the tests find. The
 * copies retried under new message-ids are absorbed only because the order service keys by the order id: keyed by
 * message-id, each would place its order a second time and the run would fail.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class TwoServicesDemoIT {

    @Test
    void aSmallRunPassesWithExactCountsFromBothServicesTables() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        TwoServicesOptions options = TwoServicesOptions.parse("--orders", "300", "--duplicates", "0.1",
                "--new-id-retries", "0.1", "--concurrency", "2", "--timeout", "120");

        TwoServicesDemo.Result r = TwoServicesDemo.execute(options, print(out), print(err));

        String summary = out.toString(StandardCharsets.UTF_8);
        assertThat(r.pass()).as(summary + err).isTrue();
        assertThat(r.published()).isEqualTo(360);
        assertThat(r.copiesAbsorbed()).as("duplicates and retries under new ids").isEqualTo(60);
        assertThat(r.ledger().rowsInOrders()).isEqualTo(300);
        assertThat(r.ledger().eventsSent()).isEqualTo(300);
        assertThat(r.ledger().eventsPending()).isZero();
        assertThat(r.handledByShipping()).isEqualTo(300);
        assertThat(r.ledger().rowsInShipments()).isEqualTo(300);
        assertThat(r.ledger().lost()).isZero();
        assertThat(r.ledger().twiceInOrders() + r.ledger().twiceInShipments()).isZero();
        assertThat(summary).contains("AceMQ two-services demo: 300 orders (+30 duplicates, +30 retries under new ids)")
                .containsPattern("shipment rows \\(service B\\)\\s+300\\s+300")
                .contains("VERDICT: PASS").doesNotContain("differs");
    }

    @Test
    void runsAgainstADatabaseGivenByUrlCountOnlyTheirOwnRows() {
        PostgresServer server = PostgresProvider.shared();
        List<String> args = new ArrayList<>(List.of("--jdbc-url", server.jdbcUrl()));
        if (server.user() != null) {
            args.addAll(List.of("--jdbc-user", server.user(), "--jdbc-password",
                    server.password() == null ? "" : server.password()));
        }
        args.addAll(List.of("--orders", "100", "--concurrency", "2"));
        for (int run = 1; run <= 2; run++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            int status = TwoServicesDemo.run(args.toArray(String[]::new), print(out),
                    print(new ByteArrayOutputStream()));
            String summary = out.toString(StandardCharsets.UTF_8);
            assertThat(status).as("run %d: %s", run, summary).isEqualTo(TwoServicesDemo.EXIT_PASS);
            assertThat(summary).as("run %d counts its own rows only", run)
                    .containsPattern("order rows \\(service A\\)\\s+100\\s+100")
                    .contains("PostgreSQL at " + server.jdbcUrl());
        }
    }

    @Test
    void anUnreachableBrokerFailsWithStatusOneAndAClearMessage() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = TwoServicesDemo.run(new String[] {"--broker", "127.0.0.1:1", "--orders", "10"},
                print(new ByteArrayOutputStream()), print(err));
        assertThat(status).isEqualTo(TwoServicesDemo.EXIT_FAIL);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("VERDICT: FAIL - the demo could not run");
    }

    private static PrintStream print(ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }
}

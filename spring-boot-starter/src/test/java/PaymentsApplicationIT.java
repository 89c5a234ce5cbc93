import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemisExtension;
import org.acemq.amqp.testsupport.PostgresExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

// the build that runs this test has Flyway and Liquibase on its class path, with no migrations: hence the last two
@SpringBootTest(properties = {"acemq.store.type=jdbc", "spring.flyway.enabled=false", "spring.liquibase.enabled=false"})
@DirtiesContext
class PaymentsApplicationIT {

    @RegisterExtension
    static final EmbeddedArtemisExtension ARTEMIS = EmbeddedArtemisExtension.withDefaults();

    @RegisterExtension
    static final PostgresExtension POSTGRES = PostgresExtension.newSchema();

    /** Stands for the application's own @SpringBootApplication class. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Payments.class)
    static class PaymentsApplication {
    }

    /** Books each payment in the same database transaction as the idempotency store's confirm. */
    static class Payments {
        private final JdbcTemplate jdbc;

        Payments(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @AcemqListener(address = "payments", databaseTransaction = "true")
        void onPayment(String amount, Envelope envelope) {
            jdbc.update("INSERT INTO ledger (payment_id, amount) VALUES (?, ?)",
                    String.valueOf(envelope.messageId()), amount);
        }
    }

    @BeforeAll
    static void createLedger() throws Exception {
        // the extensions have started: the schema exists, the application context not yet
        try (Connection c = POSTGRES.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE ledger (payment_id VARCHAR(64) PRIMARY KEY, amount VARCHAR(32))");
        }
    }

    @Autowired
    JdbcTemplate jdbc;

    @Test
    void booksEachPaymentOnce() {
        ARTEMIS.client().send("payments", AmqpTestClient.message("pay-1", "10.00"),
                AmqpTestClient.message("pay-1", "10.00"), AmqpTestClient.message("pay-2", "4.50"));

        await().atMost(Duration.ofSeconds(30)).until(() -> ARTEMIS.broker().messageCount("payments") == 0);
        assertEquals(List.of("pay-1", "pay-2"),
                jdbc.queryForList("SELECT payment_id FROM ledger ORDER BY payment_id", String.class));
    }
}

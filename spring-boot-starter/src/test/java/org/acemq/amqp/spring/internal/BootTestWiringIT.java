package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.BootTestProperties;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.EmbeddedArtemisExtension;
import org.acemq.amqp.testsupport.PostgresExtension;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.spring.AcemqTestContextCustomizerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;

/**
 * A {@code @SpringBootTest} with test-support's two extensions and no hand-passed port or URL: test-support's
 * {@link AcemqTestContextCustomizerFactory} points {@code acemq.connection.*} at the embedded broker and
 * {@code spring.datasource.*} at the PostgreSQL schema, and a transactional listener on the JDBC store consumes a
 * message into that schema exactly once. And on the JUnit Jupiter line of the Spring Boot line it runs on (5.12 on Boot
 * 3.5, 6.0 on Boot 4), the two extensions stop their broker and drop their schema when their test class ends.
 */
@Timeout(180)
@SpringBootTest(properties = {"acemq.store.type=jdbc", "acemq.store.jdbc.initialize-schema=true",
    "spring.flyway.enabled=false", "spring.liquibase.enabled=false"})
@DirtiesContext
class BootTestWiringIT {

    @RegisterExtension
    static final EmbeddedArtemisExtension ARTEMIS = EmbeddedArtemisExtension.withDefaults();

    @RegisterExtension
    static final PostgresExtension POSTGRES = PostgresExtension.newSchema();

    /** The application: a payments listener that books each payment in the same database transaction. */
    static class Payments {
        final JdbcTemplate jdbc;

        Payments(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
            jdbc.execute("CREATE TABLE ledger (payment_id VARCHAR(100) PRIMARY KEY, body VARCHAR(200))");
        }

        @AcemqListener(address = "payments", databaseTransaction = "true")
        void onPayment(String body, Envelope envelope) {
            jdbc.update("INSERT INTO ledger (payment_id, body) VALUES (?, ?)", envelope.messageId().toString(), body);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Payments.class)
    static class App {
    }

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    ConfigurableEnvironment environment;

    @Test
    void theApplicationConsumesFromTheExtensionsBrokerIntoTheExtensionsDatabase() {
        assertThat(environment.getProperty("acemq.connection.port")).isEqualTo(Integer.toString(ARTEMIS.port()));
        assertThat(environment.getProperty("spring.datasource.url")).isEqualTo(POSTGRES.jdbcUrl());

        ARTEMIS.client().send("payments", AmqpTestClient.message("pay-1", "10.00 EUR"),
                AmqpTestClient.message("pay-1", "10.00 EUR"), AmqpTestClient.message("pay-2", "4.50 EUR"));

        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
            assertThat(jdbc.queryForList("SELECT payment_id FROM ledger ORDER BY payment_id", String.class))
                    .containsExactly("pay-1", "pay-2");
            assertThat(ARTEMIS.broker().messageCount("payments")).isZero();
        });
        // the store's table is in the extension's schema, next to the ledger
        assertThat(jdbc.queryForObject("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? "
                + "AND table_name IN ('ledger', 'acemq_idempotency')", Integer.class, POSTGRES.schema().name()))
                .isEqualTo(2);
    }

    /** What the fixture class saw: its broker, and the name of its schema. */
    static final AtomicReference<EmbeddedArtemis> FIXTURE_BROKER = new AtomicReference<>();
    static final AtomicReference<String> FIXTURE_SCHEMA = new AtomicReference<>();

    /**
     * A test class with the two extensions, run through the JUnit engine of this class path (so on Boot 3.5 through
     * Jupiter 5.12, which closes only {@code CloseableResource} values of the extension store, and on Boot 4 through
     * 6.0): when it ends its broker is closed, its schema dropped and its class no longer registered for Spring tests.
     */
    @Test
    void theExtensionsStopTheBrokerAndDropTheSchemaWhenTheirTestClassEnds() {
        var tests = EngineTestKit.engine("junit-jupiter").selectors(selectClass(OneTestClass.class)).execute()
                .testEvents();
        tests.failed().stream().forEach(e -> e.getPayload(TestExecutionResult.class)
                .flatMap(TestExecutionResult::getThrowable).ifPresent(Throwable::printStackTrace));
        tests.assertStatistics(stats -> stats.started(1).succeeded(1));

        EmbeddedArtemis broker = FIXTURE_BROKER.get();
        assertThat(broker.isClosed()).as("the class's broker is closed after the class").isTrue();
        assertThat(broker.isRunning()).isFalse();
        assertThat(new JdbcTemplate(PostgresProvider.shared().dataSource()).queryForObject(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", Integer.class,
                FIXTURE_SCHEMA.get())).as("the class's schema is dropped after the class").isZero();
        assertThat(BootTestProperties.isActive(OneTestClass.class)).isFalse();
    }

    /** The fixture: one test that uses the broker, a client of it and the schema. */
    static class OneTestClass {
        @RegisterExtension
        static final EmbeddedArtemisExtension BROKER = EmbeddedArtemisExtension.withDefaults();

        @RegisterExtension
        static final PostgresExtension SCHEMA = PostgresExtension.newSchema();

        @Test
        void usesThem() {
            FIXTURE_BROKER.set(BROKER.broker());
            FIXTURE_SCHEMA.set(SCHEMA.schema().name());
            BROKER.client().send("fixture", AmqpTestClient.message("f-1", "one"));
            assertThat(BootTestProperties.isActive(OneTestClass.class)).isTrue();
            assertThat(BROKER.broker().isRunning()).isTrue();
        }
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.apache.activemq.artemis.api.core.management.QueueControl;
import org.apache.activemq.artemis.api.core.management.ResourceNames;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The operator's DLQ re-drive, end to end on embedded Artemis with the JDBC store on real PostgreSQL, through the
 * public API only and the operator's own tools: a poison message is dead-lettered after {@code maxAttempts}; moved
 * back as it is, it goes straight back to the DLQ without running the handler (its attempts are used up); once the
 * bug is fixed, the operator resets its attempts with {@code JdbcStoreTool reset-attempts} (a real {@code java}
 * process) and retries the DLQ with Artemis management ({@code QueueControl.retryMessages()}): it is processed exactly
 * once. The procedure is the one in docs/jdbc-store.md, "Re-driving a dead-lettered message".
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DlqRedriveIT extends ArtemisTestBase {

    private static final int MAX_ATTEMPTS = 3;
    private static final String QUEUE = "redrive-orders";

    /** The database the store is on, as the operator's tool reaches it. */
    record Db(String jdbcUrl, String user, String password, javax.sql.DataSource dataSource, Runnable drop) {
    }

    private Db schema;

    /** @return a fresh database for the store: a schema on the test PostgreSQL here, a MariaDB database in a subclass */
    Db openDatabase() {
        PostgresSchema pg = PostgresProvider.shared().newSchema("DlqRedriveIT");
        return new Db(pg.jdbcUrl(), pg.user(), pg.password(), pg.dataSource(), pg::close);
    }

    @AfterEach
    void dropDatabase() {
        if (schema != null) {
            schema.drop().run();
        }
    }

    @Test
    void aDeadLetteredMessageIsProcessedExactlyOnceAfterTheFixTheResetAndTheRetry() throws Exception {
        schema = openDatabase();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(schema.dataSource()).build();
        store.createSchema();
        String dlq = EmbeddedArtemis.deadLetterQueueName(QUEUE);
        AtomicBoolean fixed = new AtomicBoolean();
        AtomicInteger runs = new AtomicInteger();
        E2e.Effects effects = new E2e.Effects();
        MessageHandler handler = envelope -> {
            runs.incrementAndGet();
            if (envelope.id().equals(QUEUE + "|s:poison-1") && !fixed.get()) {
                throw new IllegalStateException("bug: cannot parse the order");
            }
            effects.record(envelope.id());
        };
        client.send(QUEUE, AmqpTestClient.message("poison-1", "order that hits the bug"),
                AmqpTestClient.message("fine-1", "order"));

        // 1. the poison message is dead-lettered after maxAttempts handler runs
        try (AmqpConsumer consumer = consumer("before-fix", store, handler)) {
            eventually().until(() -> broker.messageCount(dlq) == 1 && broker.messageCount(QUEUE) == 0);
            eventually().until(() -> effects.of(QUEUE + "|s:fine-1") == 1);
        }
        assertThat(runs).hasValue(MAX_ATTEMPTS + 1);
        assertThat(store.attempts(QUEUE + "|s:poison-1")).isEqualTo(MAX_ATTEMPTS);
        assertThat(store.isConfirmed(QUEUE + "|s:poison-1")).isFalse();

        // 2. the bug is fixed and deployed; a re-drive without the reset is rejected again, without a handler run
        fixed.set(true);
        try (AmqpConsumer consumer = consumer("after-fix", store, handler)) {
            assertThat(retryDeadLetters(dlq)).isEqualTo(1);
            eventually().until(() -> broker.messageCount(dlq) == 1 && broker.messageCount(QUEUE) == 0);
            assertThat(runs).as("attempts used up: rejected without running the handler").hasValue(MAX_ATTEMPTS + 1);
            assertThat(effects.of(QUEUE + "|s:poison-1")).isZero();

            // 3. the operator resets the key's attempts with the command-line tool, then retries the DLQ
            ToolRun reset = resetAttempts(QUEUE + "|s:poison-1");
            assertThat(reset.status()).as(reset.output()).isZero();
            assertThat(reset.output()).contains("s:poison-1: reset (attempts were ");
            assertThat(retryDeadLetters(dlq)).isEqualTo(1);

            eventually().until(() -> effects.of(QUEUE + "|s:poison-1") == 1);
            eventually().until(() -> broker.messageCount(QUEUE) == 0 && broker.messageCount(dlq) == 0
                    && store.isConfirmed(QUEUE + "|s:poison-1"));
        }
        assertThat(effects.of(QUEUE + "|s:poison-1")).as("processed exactly once").isEqualTo(1);
        assertThat(effects.repeated()).isEmpty();
        assertThat(runs).hasValue(MAX_ATTEMPTS + 2);
        assertThat(store.attempts(QUEUE + "|s:poison-1")).as("the re-driven run was attempt 1").isEqualTo(1);

        // a later copy (a publisher retry, a second re-drive) is a duplicate
        client.send(QUEUE, AmqpTestClient.message("poison-1", "order that hits the bug"));
        try (AmqpConsumer consumer = consumer("duplicate", store, handler)) {
            eventually().until(() -> broker.messageCount(QUEUE) == 0 && broker.deliveringCount(QUEUE) == 0);
        }
        assertThat(effects.of(QUEUE + "|s:poison-1")).isEqualTo(1);
        assertThat(broker.messageCount(dlq)).isZero();
    }

    private AmqpConsumer consumer(String name, JdbcIdempotencyStore store, MessageHandler handler) {
        return E2e.consumer(broker, name).store(store)
                .subscribe(Subscription.builder(QUEUE, handler).maxAttempts(MAX_ATTEMPTS)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start();
    }

    /** The operator's move back: Artemis management, {@code retryMessages()} on the DLQ's queue control. */
    private static int retryDeadLetters(String dlq) throws Exception {
        QueueControl control = (QueueControl) broker.server().getManagementService()
                .getResource(ResourceNames.QUEUE + dlq);
        assertThat(control).as("management control of %s", dlq).isNotNull();
        return control.retryMessages();
    }

    record ToolRun(int status, String output) {
    }

    /** Runs {@code java -cp … org.acemq.amqp.store.jdbc.JdbcStoreTool reset-attempts} as an operator would. */
    private ToolRun resetAttempts(String key) throws IOException, InterruptedException {
        String classpath = String.join(File.pathSeparator, System.getProperty("java.class.path"),
                System.getProperty("jdk.module.path", ""));
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-cp", classpath, "org.acemq.amqp.store.jdbc.JdbcStoreTool", "reset-attempts",
                "--url", schema.jdbcUrl()));
        if (schema.user() != null) {
            command.addAll(List.of("--user", schema.user()));
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        if (schema.password() != null) {
            command.addAll(List.of("--password-env", "ACEMQ_REDRIVE_PASSWORD"));
            builder.command(command).environment().put("ACEMQ_REDRIVE_PASSWORD", schema.password());
        }
        command.add(key);
        builder.command(command);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("JdbcStoreTool did not finish: " + output);
        }
        return new ToolRun(process.exitValue(), output);
    }

    /** @return an await that allows for a loaded machine (the scenario takes seconds on an idle one) */
    private static org.awaitility.core.ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(60));
    }
}

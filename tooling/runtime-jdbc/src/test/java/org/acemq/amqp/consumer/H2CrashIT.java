package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.h2.jdbcx.JdbcConnectionPool;
import org.h2.tools.Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A consumer process killed (SIGKILL) while its handlers hold claims on the JDBC store with H2: the database is an
 * in-memory H2 database served by H2's TCP server in the test JVM, so that the killed process ({@link
 * H2CrashingConsumerMain}, a JVM of its own) and the survivor share it. The messages the killed consumer held come back
 * from the broker, read {@code IN_PROGRESS} until the dead owner's leases lapse on the database clock, and are then
 * taken over by the survivor as attempt 2. Every message takes effect exactly once.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class H2CrashIT extends ArtemisTestBase {

    private static final String QUEUE = "h2-crash";
    private static final int MESSAGES = 40;
    private static final long LEASE_MILLIS = 3_000;
    /** The killed consumer's standard error, for the failure message. */
    private static final Path CHILD_ERRORS = Path.of("target", "H2CrashIT-child.log").toAbsolutePath();

    private Server server;
    private Process crashing;

    @BeforeEach
    void startH2Server() throws SQLException {
        server = Server.createTcpServer("-tcpPort", "0", "-ifNotExists").start();
    }

    @AfterEach
    void stop() {
        if (crashing != null) {
            crashing.destroyForcibly();
        }
        if (server != null) {
            server.stop();
        }
    }

    @Test
    void messagesHeldByAKilledConsumerAreTakenOverAfterTheLeaseAndTakeEffectOnce() throws Exception {
        String url = "jdbc:h2:tcp://127.0.0.1:" + server.getPort() + "/mem:H2CrashIT_" + System.nanoTime()
                + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000";
        JdbcConnectionPool pool = JdbcConnectionPool.create(url, "sa", "");
        try {
            JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool).lease(Duration.ofMillis(LEASE_MILLIS))
                    .build();
            store.createSchema();
            List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                messages.add(AmqpTestClient.message("order-" + i, "order " + i));
            }
            client.send(QUEUE, messages);

            Set<String> held = ConcurrentHashMap.newKeySet();
            crashing = startCrashingConsumer(url);
            try (BufferedReader out = new BufferedReader(new InputStreamReader(crashing.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while (held.size() < 4 && (line = out.readLine()) != null) {
                    if (line.startsWith("started ")) {
                        held.add(line.substring("started ".length()));
                    }
                }
                assertThat(held).as("keys whose handlers run in the process to be killed (its standard error: %s)",
                        CHILD_ERRORS).hasSize(4);
                for (String key : held) {
                    assertThat(store.attempts(key)).as("claimed by the process to be killed: %s", key).isEqualTo(1);
                }
                crashing.destroyForcibly();
                assertThat(crashing.waitFor(30, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(crashing.exitValue()).as("killed by SIGKILL").isEqualTo(137);

            E2e.Effects effects = new E2e.Effects();
            try (AmqpConsumer survivor = E2e.consumer(broker, "survivor").store(store)
                    .subscribe(Subscription.builder(QUEUE, envelope -> effects.record(envelope.id()))
                            .concurrency(4).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                    .start()) {
                await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
                        .until(() -> effects.ids().size() == MESSAGES && broker.messageCount(QUEUE) == 0
                                && broker.deliveringCount(QUEUE) == 0);
            }
            assertThat(effects.repeated()).isEmpty();
            assertThat(effects.total()).isEqualTo(MESSAGES);
            for (String key : held) {
                assertThat(store.attempts(key)).as("attempts of %s, taken over from the dead owner", key)
                        .isEqualTo(2);
                assertThat(store.isConfirmed(key)).isTrue();
            }
        } finally {
            pool.dispose();
        }
    }

    private static Process startCrashingConsumer(String url) throws IOException {
        String classpath = String.join(File.pathSeparator, System.getProperty("java.class.path"),
                System.getProperty("jdk.module.path", ""));
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classpath, H2CrashingConsumerMain.class.getName(), broker.host(),
                Integer.toString(broker.port()), url, QUEUE, Long.toString(LEASE_MILLIS));
        return new ProcessBuilder(command).redirectError(CHILD_ERRORS.toFile()).start();
    }
}

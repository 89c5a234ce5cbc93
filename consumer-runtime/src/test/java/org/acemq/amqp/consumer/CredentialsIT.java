package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Credentials never appear in {@link ConnectionSettings#toString()}, in the exception a rejected login throws, in log
 * output (slf4j-simple writes to System.err, which is teed here), in {@code health()} or in observer events (the
 * input of metrics). Against an embedded Artemis that requires a user and password.
 */
@Timeout(90)
class CredentialsIT {

    static final String USER = "acemq-user";
    static final String PASSWORD = "Pa55-w0rd-never-logged-7f3a";
    static final String WRONG = "Wr0ng-pa55-also-secret-91c2";

    static EmbeddedArtemis broker;
    PrintStream originalErr;
    ByteArrayOutputStream captured;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedArtemis.builder().requireCredentials(USER, PASSWORD).build().start();
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @BeforeEach
    void teeStandardError() {
        originalErr = System.err;
        captured = new ByteArrayOutputStream();
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                originalErr.write(b);
                synchronized (captured) {
                    captured.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                originalErr.write(b, off, len);
                synchronized (captured) {
                    captured.write(b, off, len);
                }
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreStandardError() {
        System.setErr(originalErr);
    }

    String log() {
        synchronized (captured) {
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    static ConnectionSettings.Builder settings(String password) {
        return ConnectionSettings.builder(broker.host(), broker.port()).credentials(USER, password);
    }

    @Test
    void connectionSettingsToStringShowsThatCredentialsAreSetButNeverTheirValues() {
        ConnectionSettings s = settings(PASSWORD).trustStore("/etc/trust.p12", "trust-" + PASSWORD)
                .keyStore("/etc/key.p12", "key-" + PASSWORD).build();
        assertThat(s.toString()).doesNotContain(PASSWORD).contains("password=<hidden>").contains("user=<set>");
    }

    @Test
    void aRejectedPasswordFailsAFailFastStartWithAnExceptionAndLogsThatNeverContainAPassword() {
        Throwable failure = catchThrowable(() -> AmqpConsumer.builder()
                .name("creds-wrong")
                .connection(settings(WRONG).reconnect(false).build())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe("orders", e -> { })
                .failFastStart(true)
                .start());

        assertThat(failure).isInstanceOf(AcemqException.class).hasMessageContaining("cannot start consumer");
        StringWriter trace = new StringWriter();
        failure.printStackTrace(new PrintWriter(trace));
        assertThat(trace.toString()).as("messages, causes and suppressed exceptions")
                .doesNotContain(WRONG).doesNotContain(PASSWORD);
        assertThat(log()).doesNotContain(WRONG).doesNotContain(PASSWORD);
    }

    /**
     * Starting in the background (the default), a refused password is not retried: the consumer ends FAILED, and
     * neither its last error nor the log carries the password.
     */
    @Test
    void aRejectedPasswordEndsABackgroundStartInFailedStateWithoutTheCredential() {
        try (AmqpConsumer consumer = AmqpConsumer.builder()
                .name("creds-wrong-bg")
                .connection(settings(WRONG).reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(100)).build())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe("orders", e -> { })
                .start()) {
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> consumer.health().state() == ConsumerHealth.State.FAILED);
            assertThat(consumer.health().healthy()).isFalse();
            assertThat(consumer.health().lastError()).isNotNull().doesNotContain(WRONG).doesNotContain(PASSWORD);
        }
        assertThat(log()).contains("gives up connecting").doesNotContain(WRONG).doesNotContain(PASSWORD);
    }

    @Test
    void aSuccessfulConnectAndAConnectionLossLogReportAndCountNoCredential() throws Exception {
        List<String> events = new CopyOnWriteArrayList<>();
        AtomicInteger handled = new AtomicInteger();
        ConsumerObserver observer = (ConsumerObserver) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {ConsumerObserver.class}, (proxy, method, args) -> {
                    if (method.getDeclaringClass() == Object.class) {
                        return method.getName().equals("toString") ? "recording" : null;
                    }
                    events.add(method.getName() + (args == null ? "" : Arrays.deepToString(args)));
                    return null;
                });
        try (AmqpConsumer consumer = AmqpConsumer.builder()
                .name("creds-ok")
                .connection(settings(PASSWORD).reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(200)).build())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe("creds-orders", e -> handled.incrementAndGet())
                .start();
             AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), USER, PASSWORD)) {
            client.send("creds-orders", AmqpTestClient.message("c-1", "one"));
            await().atMost(Duration.ofSeconds(20)).until(() -> handled.get() == 1);

            broker.dropAllConnections();
            await().atMost(Duration.ofSeconds(20)).until(() -> consumer.health().lastError() != null);
            String lastError = consumer.health().lastError();
            assertThat(lastError).doesNotContain(PASSWORD);
            assertThat(consumer.health().toString()).doesNotContain(PASSWORD);

            try (AmqpTestClient again = AmqpTestClient.connect(broker.host(), broker.port(), USER, PASSWORD)) {
                again.send("creds-orders", AmqpTestClient.message("c-2", "two"));
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> handled.get() == 2);
        }
        assertThat(log()).as("the capture works").contains("Consumer 'creds-ok' started")
                .doesNotContain(PASSWORD);
        assertThat(events).isNotEmpty().noneMatch(e -> e.contains(PASSWORD));
    }
}

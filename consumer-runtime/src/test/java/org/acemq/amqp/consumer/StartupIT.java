package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Start-up without a broker: {@code start()} returns while the first connection is tried in the
 * background; {@code health()} says so; a broker that comes up later is used as soon as it answers; a broker that
 * never comes leaves the consumer not ready, with the last error, and {@code close()} works. {@code failFastStart}
 * keeps the old behaviour.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StartupIT {

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static AmqpConsumer.Builder consumer(int port, E2e.Effects effects) {
        return AmqpConsumer.builder()
                .name("late")
                .connection(ConnectionSettings.builder("127.0.0.1", port)
                        .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(300)).build())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder("late-orders", e -> effects.record(e.id())).build());
    }

    @Test
    void aConsumerStartedBeforeItsBrokerConsumesOnceTheBrokerComesUp() throws Exception {
        int port = freePort();
        E2e.Effects effects = new E2e.Effects();
        try (AmqpConsumer consumer = consumer(port, effects).start()) {
            ConsumerHealth starting = consumer.health();
            assertThat(starting.state()).isEqualTo(ConsumerHealth.State.STARTING);
            assertThat(starting.connected()).isFalse();
            assertThat(starting.healthy()).isFalse();
            await().until(() -> consumer.health().lastError() != null);
            assertThat(consumer.health().lastError()).startsWith("connection:");

            try (EmbeddedArtemis broker = EmbeddedArtemis.builder().port(port).build().start()) {
                await().atMost(Duration.ofSeconds(20)).until(() -> consumer.health().healthy());
                assertThat(consumer.health().state()).isEqualTo(ConsumerHealth.State.RUNNING);
                assertThat(consumer.health().lastError()).as("the last error seen").startsWith("connection:");
                try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
                    client.sendBatch("late-orders", 20, i -> "late-" + i);
                }
                await().until(() -> effects.total() == 20 && broker.messageCount("late-orders") == 0);
            }
        }
        assertThat(effects.repeated()).isEmpty();
    }

    @Test
    void aBrokerThatNeverComesLeavesTheConsumerNotReadyWithItsLastErrorAndCloseWorks() throws Exception {
        int port = freePort();
        AmqpConsumer consumer = consumer(port, new E2e.Effects()).start();
        try {
            await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5))
                    .until(() -> consumer.health().state() == ConsumerHealth.State.STARTING
                            && !consumer.health().healthy());
            assertThat(consumer.health().lastError()).startsWith("connection:");
            assertThat(consumer.health().subscriptions()).allSatisfy(s -> assertThat(s.attached()).isFalse());
        } finally {
            long start = System.nanoTime();
            assertThat(consumer.close(Duration.ofSeconds(5))).isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        }
        assertThat(consumer.health().state()).isEqualTo(ConsumerHealth.State.STOPPED);
    }

    @Test
    void failFastStartThrowsWhenTheBrokerIsNotThere() throws Exception {
        int port = freePort();
        Throwable failure = catchThrowable(() -> consumer(port, new E2e.Effects()).failFastStart(true).start());
        assertThat(failure).isInstanceOf(AcemqException.class).hasMessageContaining("cannot start consumer 'late'");
    }
}

package org.acemq.amqp.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import io.lettuce.core.RedisClient;

/**
 * A consumer process killed (SIGKILL) while its handlers hold claims on the Redis store: the messages it held come
 * back from the broker, read {@code IN_PROGRESS} until the dead owner's leases lapse on the Redis clock, and are then
 * taken over by the surviving consumer as attempt 2. Every message takes effect exactly once.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RedisCrashIT {

    private static final String QUEUE = "redis-crash";
    private static final int MESSAGES = 40;
    private static final long LEASE_MILLIS = 3_000;

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;
    private static RedisClient redis;

    @BeforeAll
    static void start() {
        redis = RedisClient.create(RedisServers.standalone());
        broker = E2e.broker();
        client = AmqpTestClient.connect(broker);
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
        if (redis != null) {
            redis.shutdown();
        }
    }

    @Test
    void messagesHeldByAKilledConsumerAreTakenOverAfterTheLeaseAndTakeEffectOnce() throws Exception {
        String prefix = "crash-" + System.nanoTime() + ":";
        List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            messages.add(AmqpTestClient.message("order-" + i, "order " + i));
        }
        client.send(QUEUE, messages);

        Set<String> held = ConcurrentHashMap.newKeySet();
        Process crashing = startCrashingConsumer(prefix);
        try (BufferedReader out = new BufferedReader(new InputStreamReader(crashing.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while (held.size() < 4 && (line = out.readLine()) != null) {
                if (line.startsWith("started ")) {
                    held.add(line.substring("started ".length()));
                }
            }
            assertThat(held).as("keys whose handlers run in the process to be killed").hasSize(4);
            crashing.destroyForcibly();
            assertThat(crashing.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }

        E2e.Effects effects = new E2e.Effects();
        try (RedisIdempotencyStore store = RedisIdempotencyStore.builder(redis).keyPrefix(prefix)
                .lease(Duration.ofMillis(LEASE_MILLIS)).build();
                AmqpConsumer survivor = E2e.consumer(broker, "survivor", store)
                        .subscribe(Subscription.builder(QUEUE, envelope -> effects.record(envelope.id()))
                                .concurrency(4).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                        .start()) {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
                    .until(() -> effects.distinct() == MESSAGES && broker.messageCount(QUEUE) == 0
                            && broker.deliveringCount(QUEUE) == 0);
            assertThat(effects.repeated()).isEmpty();
            assertThat(effects.total()).isEqualTo(MESSAGES);
            for (String key : held) {
                assertThat(store.attempts(key)).as("attempts of %s, taken over from the dead owner", key)
                        .isEqualTo(2);
                assertThat(store.isConfirmed(key)).isTrue();
            }
        }
    }

    private static Process startCrashingConsumer(String prefix) throws IOException {
        String classpath = String.join(File.pathSeparator, System.getProperty("java.class.path"),
                System.getProperty("jdk.module.path", ""));
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classpath, CrashingConsumerMain.class.getName(), broker.host(),
                Integer.toString(broker.port()), RedisServers.standalone().toURI().toString(), prefix, QUEUE,
                Long.toString(LEASE_MILLIS));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    }
}

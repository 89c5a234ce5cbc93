package org.acemq.amqp.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.api.MessageHandler;
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
 * The runtime on the Redis store, end to end: embedded Artemis, two consumers (two store owners) on one queue, a
 * standalone Redis ({@link RedisServers#standalone()}). Every message is sent twice, and some handlers fail on their
 * first attempt: each message's effect happens exactly once, its key ends confirmed in Redis, and the attempts Redis
 * counted are the handler runs.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisEndToEndIT {

    private static final String QUEUE = "redis-orders";
    private static final int MESSAGES = 300;

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
    void everyMessageTakesEffectOnceAcrossTwoConsumersDuplicatesAndFailedAttempts() {
        String prefix = "e2e-" + System.nanoTime() + ":";
        E2e.Effects effects = new E2e.Effects();
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        MessageHandler handler = envelope -> {
            String id = envelope.id();
            if (id.endsWith("0") && failedOnce.add(id)) {
                throw new IllegalStateException("first attempt of " + id + " fails");
            }
            effects.record(id);
        };
        try (RedisIdempotencyStore storeA = RedisIdempotencyStore.builder(redis).keyPrefix(prefix).build();
                RedisIdempotencyStore storeB = RedisIdempotencyStore.builder(redis).keyPrefix(prefix).build();
                AmqpConsumer a = consumer("a", storeA, handler);
                AmqpConsumer b = consumer("b", storeB, handler)) {
            List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                messages.add(AmqpTestClient.message("order-" + i, "order " + i));
            }
            client.send(QUEUE, messages);
            client.send(QUEUE, messages);

            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
                    .until(() -> effects.distinct() == MESSAGES && broker.messageCount(QUEUE) == 0
                            && broker.deliveringCount(QUEUE) == 0);

            assertThat(effects.repeated()).as("effects that happened twice").isEmpty();
            assertThat(effects.total()).isEqualTo(MESSAGES);
            for (int i = 0; i < MESSAGES; i++) {
                String key = QUEUE + "|s:order-" + i;
                assertThat(storeA.isConfirmed(key)).as(key).isTrue();
                assertThat(storeB.attempts(key)).as("attempts of %s", key).isEqualTo(key.endsWith("0") ? 2 : 1);
            }
        }
    }

    private static AmqpConsumer consumer(String name, RedisIdempotencyStore store, MessageHandler handler) {
        return E2e.consumer(broker, name, store)
                .subscribe(Subscription.builder(QUEUE, handler).concurrency(4).maxAttempts(5)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start();
    }
}

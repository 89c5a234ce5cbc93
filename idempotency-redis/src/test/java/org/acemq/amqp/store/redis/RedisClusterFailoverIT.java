package org.acemq.amqp.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;

/**
 * A Redis Cluster master killed (SIGKILL) while two consumers run on it: a private cluster of three masters with one
 * replica each, {@code cluster-node-timeout} 1 s, so a replica takes over the dead master's slots. What
 * docs/redis-store.md promises for this case is what is checked: no message is lost (every message takes effect, every
 * key ends confirmed, the queue drains), and an effect can repeat only for keys in the slots of the killed master
 * (writes it acknowledged and had not yet replicated are lost with it; nothing else is).
 */
@Timeout(value = 420, unit = TimeUnit.SECONDS)
class RedisClusterFailoverIT {

    private static final String QUEUE = "redis-failover";
    private static final int MESSAGES = 600;
    private static final int KILL_AFTER = 150;

    private static List<RedisServers.RedisProcess> nodes;
    private static RedisClusterClient redis;
    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void start() {
        String url = System.getenv(RedisServers.CLUSTER_URL_ENV);
        if (url != null && !url.isBlank()) {
            throw new IllegalStateException("this test kills a master of a cluster it starts itself; it does not "
                    + "run against " + RedisServers.CLUSTER_URL_ENV + " (unset it, and install the Debian package "
                    + "redis-server)");
        }
        nodes = RedisServers.RedisProcess.startCluster(3, 1);
        redis = RedisServers.clusterClient(nodes.get(0).uri());
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
        if (nodes != null) {
            nodes.forEach(RedisServers.RedisProcess::stop);
        }
    }

    @Test
    void aMasterKilledWhileConsumersRunLosesNoMessageAndRepeatsOnlyKeysOfItsSlots() {
        String prefix = "failover:";
        redis.refreshPartitions();
        RedisClusterNode victim = redis.getPartitions().getPartitionBySlot(0);
        Set<Integer> victimSlots = new TreeSet<>(victim.getSlots());
        RedisServers.RedisProcess victimProcess = nodes.stream()
                .filter(node -> node.port() == victim.getUri().getPort()).findFirst().orElseThrow();
        // startCluster returned with every replica synced: the victim's replica can stand for election
        RedisServers.RedisProcess replica = nodes.stream()
                .filter(node -> node.info("INFO replication").contains("master_port:" + victimProcess.port()))
                .findFirst().orElseThrow();
        assertThat(replica.isSyncedReplica()).as("the replica of the master to be killed is in sync").isTrue();

        E2e.Effects effects = new E2e.Effects();
        AtomicInteger started = new AtomicInteger();
        CountDownLatch killed = new CountDownLatch(1);
        MessageHandler handler = envelope -> {
            if (started.incrementAndGet() >= KILL_AFTER) {
                // hold the handlers (and their claims) until the master is dead, so claims and confirms are in flight
                // across the failover
                killed.await(60, TimeUnit.SECONDS);
            }
            effects.record(envelope.id());
        };
        try (RedisIdempotencyStore storeA = store(prefix);
                RedisIdempotencyStore storeB = store(prefix);
                AmqpConsumer a = consumer("a", storeA, handler);
                AmqpConsumer b = consumer("b", storeB, handler)) {
            List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                messages.add(AmqpTestClient.message("order-" + i, "order " + i));
            }
            client.send(QUEUE, messages);

            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20))
                    .until(() -> started.get() >= KILL_AFTER + 4);
            victimProcess.kill();
            long killedAt = System.nanoTime();
            killed.countDown();

            // the failover itself (cluster-node-timeout 1 s, then an election): without it nothing below can happen
            try {
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                        .until(replica::isMaster);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                throw new AssertionError("the killed master's replica (port " + replica.port() + ") was not "
                        + "promoted within 60 s; its log ends:\n" + replica.logTail(), e);
            }
            long promotedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);

            await().atMost(Duration.ofSeconds(300)).pollInterval(Duration.ofMillis(100))
                    .until(() -> effects.distinct() == MESSAGES && broker.messageCount(QUEUE) == 0
                            && broker.deliveringCount(QUEUE) == 0);
            long drainedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);

            // a replica now serves the dead master's slots
            redis.refreshPartitions();
            assertThat(redis.getPartitions().getPartitionBySlot(0).getUri().getPort())
                    .isNotEqualTo(victim.getUri().getPort());

            assertThat(effects.distinct()).as("messages that took effect").isEqualTo(MESSAGES);
            try (RedisIdempotencyStore check = store(prefix)) {
                // every key confirmed (a confirmation the runtime gave up on after confirmTimeout would show here);
                // read all keys per round, not one await per key (each await first sleeps its poll delay)
                await().atMost(Duration.ofSeconds(60)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(500))
                        .ignoreExceptions()
                        .untilAsserted(() -> assertThat(unconfirmed(check)).as("keys not confirmed").isEmpty());
                for (String key : effects.repeated().keySet()) {
                    assertThat(victimSlots).as("a repeated effect (%s) must be a key of the killed master", key)
                            .contains(SlotHash.getSlot(check.redisKey(key)));
                }
            }
            System.out.printf("failover: %d messages, %d keys on the killed master's %d slots, %d repeated effects; "
                    + "replica promoted %d ms and queue drained %d ms after the kill%n", MESSAGES,
                    countOn(victimSlots, prefix), victimSlots.size(), effects.repeated().size(), promotedMillis,
                    drainedMillis);
        }
    }

    private static List<String> unconfirmed(RedisIdempotencyStore store) {
        List<String> unconfirmed = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            String key = QUEUE + "|s:order-" + i;
            if (!store.isConfirmed(key)) {
                unconfirmed.add(key);
            }
        }
        return unconfirmed;
    }

    private static long countOn(Set<Integer> slots, String prefix) {
        long count = 0;
        for (int i = 0; i < MESSAGES; i++) {
            if (slots.contains(SlotHash.getSlot(prefix + "{" + QUEUE + "|s:order-" + i + "}"))) {
                count++;
            }
        }
        return count;
    }

    private static RedisIdempotencyStore store(String prefix) {
        return RedisIdempotencyStore.builder(redis).keyPrefix(prefix).lease(Duration.ofSeconds(5))
                .timeout(Duration.ofSeconds(1)).build();
    }

    private static AmqpConsumer consumer(String name, RedisIdempotencyStore store, MessageHandler handler) {
        return E2e.consumer(broker, name, store)
                .subscribe(Subscription.builder(QUEUE, handler).concurrency(4).maxAttempts(10)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start();
    }
}

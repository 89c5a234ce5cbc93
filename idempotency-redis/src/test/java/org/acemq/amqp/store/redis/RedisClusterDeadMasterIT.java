package org.acemq.amqp.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.StoreUnavailableException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;

/**
 * The store's batch calls on a cluster whose master of some slots is dead and has no replica (its slots stay without a
 * master; the cluster is private to this class). A batch is split into one script per slot, all sent at once; the calls
 * to the dead master get no answer (Lettuce keeps them queued for a reconnect). What is checked: the batch fails with
 * {@link StoreUnavailableException} within about one {@code timeout}, not one timeout per slot of the dead master (it
 * did, when each slot's answer was awaited with the full timeout in turn: a batch over 30 such slots took 30 s with a
 * 1 s timeout, and during a cluster failover a consumer's confirm or claim call hung that long); {@code acquireAll}
 * gives back what the live masters claimed without counting it as an attempt (also when the batch is retried), and
 * {@code confirmAll} leaves what the live masters confirmed confirmed.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RedisClusterDeadMasterIT {

    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    /**
     * Slots of the dead master a batch spans: with one timeout per slot it would take this many timeouts. The store
     * keeps its records in 48 slots, 16 per master of an even three-way split (three per scope, one on each master),
     * so a batch reaches 16 slots of one master only with identifiers of 16 scopes: every slot it can.
     */
    private static final int DEAD_SLOTS = 16;
    /** Far below DEAD_SLOTS timeouts, far above one timeout even on a loaded machine. */
    private static final Duration FAILS_WITHIN = Duration.ofSeconds(10);

    private static final String PREFIX = "dead-master:";

    private static List<RedisServers.RedisProcess> nodes;
    private static RedisClusterClient redis;
    private static Set<Integer> deadSlots;
    private static RedisIdempotencyStore store;
    private static RedisIdempotencyStore other;

    @BeforeAll
    static void start() {
        try {
            nodes = RedisServers.RedisProcess.startCluster(3, 0);
        } catch (RuntimeException e) {
            throw new IllegalStateException("this test kills a master of a private cluster it starts from the Debian "
                    + "package redis-server (apt-get install redis-server; never the system service): "
                    + e.getMessage(), e);
        }
        // the live masters keep serving their own slots while the dead one's have no master
        for (RedisServers.RedisProcess node : nodes) {
            assertThat(node.info("CONFIG SET cluster-require-full-coverage no")).contains("OK");
        }
        redis = RedisServers.clusterClient(nodes.get(0).uri());
        redis.refreshPartitions();
        RedisClusterNode victim = redis.getPartitions().getPartitionBySlot(0);
        deadSlots = new TreeSet<>(victim.getSlots());
        // the stores are connected to every master before it dies, as a running consumer's store is
        store = store();
        other = store();
        List<String> warmUp = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            warmUp.add("warm-up|k" + i);
        }
        store.confirmAll(store.acquireAll(warmUp));
        other.isConfirmed("warm-up|k0");
        nodes.stream().filter(node -> node.port() == victim.getUri().getPort()).findFirst().orElseThrow().kill();
    }

    @AfterAll
    static void stop() {
        if (store != null) {
            store.close();
        }
        if (other != null) {
            other.close();
        }
        if (redis != null) {
            redis.shutdown();
        }
        if (nodes != null) {
            nodes.forEach(RedisServers.RedisProcess::stop);
        }
    }

    @Test
    void acquireAllOverManySlotsOfADeadMasterFailsWithinTheTimeoutAndGivesBackTheLiveClaims() {
        Batch batch = batch("acquire-");
        {
            // one live key was claimed and released before: the give-backs must leave it at that one attempt
            String triedBefore = batch.live.get(0);
            assertThat(store.release(store.acquire(triedBefore))).isTrue();
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.acquireAll(batch.ids)).isInstanceOf(StoreUnavailableException.class);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(took).as("acquireAll over %d slots of a dead master, timeout %s", DEAD_SLOTS, TIMEOUT)
                    .isLessThan(FAILS_WITHIN);

            // the consumer retries the batch while the master stays dead: each failed call gives its live claims back
            for (int retry = 0; retry < 2; retry++) {
                assertThatThrownBy(() -> store.acquireAll(batch.ids)).isInstanceOf(StoreUnavailableException.class);
            }

            // nothing stays claimed by the failed calls, and what they gave back is no attempt: another owner claims
            // every live key at once, as its first attempt (were the give-backs counted, a master that stays down
            // would drive the live keys to maxAttempts and the consumer would reject them as poison)
            for (String id : batch.live) {
                Claim claim = other.acquire(id);
                assertThat(claim.result()).as(id).isEqualTo(ClaimResult.CLAIMED);
                assertThat(claim.attempt()).as("attempt of %s after three failed batches", id)
                        .isEqualTo(id.equals(triedBefore) ? 2 : 1);
            }
        }
    }

    @Test
    void confirmAllOverManySlotsOfADeadMasterFailsWithinTheTimeoutAndKeepsTheLiveConfirmations() {
        Batch batch = batch("confirm-");
        {
            List<Claim> claims = new ArrayList<>();
            for (String id : batch.ids) {
                claims.add(new Claim(id, ClaimResult.CLAIMED, 1));
            }
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.confirmAll(claims)).isInstanceOf(StoreUnavailableException.class);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(took).as("confirmAll over %d slots of a dead master, timeout %s", DEAD_SLOTS, TIMEOUT)
                    .isLessThan(FAILS_WITHIN);

            for (String id : batch.live) {
                assertThat(store.isConfirmed(id)).as(id).isTrue();
            }
        }
    }

    /**
     * Identifiers of which DEAD_SLOTS fall in distinct slots of the dead master and as many on live masters (from as
     * many scopes as that takes).
     */
    private static Batch batch(String scope) {
        List<String> ids = new ArrayList<>();
        List<String> live = new ArrayList<>();
        Set<Integer> dead = new TreeSet<>();
        for (int i = 0; dead.size() < DEAD_SLOTS || live.size() < DEAD_SLOTS; i++) {
            String id = scope + (i % 97) + "|k" + i;
            int slot = SlotHash.getSlot(store.redisKey(id));
            if (deadSlots.contains(slot)) {
                if (dead.size() < DEAD_SLOTS && dead.add(slot)) {
                    ids.add(id);
                }
            } else if (live.size() < DEAD_SLOTS) {
                live.add(id);
                ids.add(id);
            }
        }
        return new Batch(ids, live);
    }

    private static RedisIdempotencyStore store() {
        return RedisIdempotencyStore.builder(redis).keyPrefix(PREFIX).timeout(TIMEOUT).build();
    }

    private record Batch(List<String> ids, List<String> live) {
    }
}

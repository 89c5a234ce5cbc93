package org.acemq.amqp.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.store.redis.internal.RedisScript;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import io.lettuce.core.KeyScanArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;

/**
 * Upgrading a running deployment from the first key layout ({@code <prefix>{<identifier>}}, every identifier its own
 * hash tag) to layout 2. The first layout's records are written here as its store wrote them: at its keys, by the same
 * scripts with the same arguments (the scripts are unchanged since: {@link #firstLayoutScriptsAreUnchanged} pins their
 * SHA-1 to the first layout's). Then a store of this version is built on the prefix and must find every record as it
 * was: confirmed ones confirmed, a live claim of the old owner in progress, attempt counts and forget times kept, on a
 * standalone server and on a three-master cluster.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RedisLayoutMigrationIT {

    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final String OLD_OWNER = "redis-4242-0ld0wner";

    enum Server { STANDALONE, CLUSTER }

    private static RedisClient standaloneClient;
    private static StatefulRedisConnection<String, String> standaloneAdmin;
    private static RedisClusterClient clusterClient;
    private static StatefulRedisClusterConnection<String, String> clusterAdmin;

    private static synchronized RedisClusterCommands<String, String> admin(Server server) {
        if (server == Server.STANDALONE) {
            if (standaloneClient == null) {
                standaloneClient = RedisClient.create(RedisServers.standalone());
                standaloneAdmin = standaloneClient.connect();
            }
            return standaloneAdmin.sync();
        }
        if (clusterClient == null) {
            clusterClient = RedisServers.clusterClient(RedisServers.cluster());
            clusterAdmin = clusterClient.connect();
        }
        return clusterAdmin.sync();
    }

    private static RedisIdempotencyStore.Builder builder(Server server) {
        admin(server);
        return server == Server.STANDALONE ? RedisIdempotencyStore.builder(standaloneClient)
                : RedisIdempotencyStore.builder(clusterClient);
    }

    @AfterAll
    static synchronized void close() {
        if (standaloneClient != null) {
            standaloneAdmin.close();
            standaloneClient.shutdown();
        }
        if (clusterClient != null) {
            clusterAdmin.close();
            clusterClient.shutdown();
        }
    }

    @Test
    void firstLayoutScriptsAreUnchanged() {
        // the SHA-1s of acquire.lua, confirm.lua and release.lua as the first key layout's store ran them
        assertThat(RedisScript.ACQUIRE.sha()).isEqualTo("3c09826f89fec75145932c15a0972b11aa398763");
        assertThat(RedisScript.CONFIRM.sha()).isEqualTo("f57737e607eff6e5d84a92dc2c5c66fdd66c787a");
        assertThat(RedisScript.RELEASE.sha()).isEqualTo("e56ac7493f68e7529c1e13dedd189cab8db435bb");
    }

    @ParameterizedTest
    @EnumSource(Server.class)
    void recordsOfTheFirstLayoutAreFoundAsTheyWereAfterTheUpgrade(Server server) {
        String prefix = prefix("upgrade");
        FirstLayoutStore old = new FirstLayoutStore(admin(server), prefix);
        String confirmed = "orders|s:" + UUID.randomUUID();
        String confirmedById = "orders|s:confirmed-by-id";
        String inProgress = "orders|s:in-progress";
        String released = "payments|m:42";
        String braces = "odd%7Cscope|s:a}b{c";
        Claim c = old.acquire(confirmed);
        assertThat(c.result()).isEqualTo(ClaimResult.CLAIMED);
        old.confirm(c);
        old.confirm(confirmedById);
        old.acquire(inProgress);
        old.release(old.acquire(released));
        Claim second = old.acquire(released);
        assertThat(second.attempt()).isEqualTo(2);
        old.release(second);
        old.confirm(old.acquire(braces));
        String forgetTime = admin(server).hget(old.key(confirmed), "x");

        try (RedisIdempotencyStore store = builder(server).keyPrefix(prefix).lease(LEASE).retention(RETENTION)
                .build()) {
            assertThat(store.isConfirmed(confirmed)).isTrue();
            assertThat(store.isConfirmed(confirmedById)).isTrue();
            assertThat(store.isConfirmed(braces)).isTrue();
            assertThat(store.acquire(confirmed).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            assertThat(store.acquire(braces).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
            assertThat(store.attempts(released)).isEqualTo(2);
            Claim inProgressNow = store.acquire(inProgress);
            assertThat(inProgressNow.result()).as("the old owner's lease still runs").isEqualTo(ClaimResult.IN_PROGRESS);
            assertThat(inProgressNow.attempt()).isEqualTo(1);
            Claim third = store.acquire(released);
            assertThat(third.result()).isEqualTo(ClaimResult.CLAIMED);
            assertThat(third.attempt()).as("the attempt count goes on").isEqualTo(3);
            // the batch path reads the moved records too
            assertThat(store.acquireAll(List.of(confirmed, confirmedById, "orders|s:new")))
                    .extracting(Claim::result).containsExactly(ClaimResult.ALREADY_CONFIRMED,
                            ClaimResult.ALREADY_CONFIRMED, ClaimResult.CLAIMED);

            String moved = store.redisKey(confirmed);
            assertThat(admin(server).hget(moved, "x")).as("forget time kept").isEqualTo(forgetTime);
            assertThat(admin(server).pttl(moved)).as("expires with the retention, as before")
                    .isBetween(RETENTION.minusMinutes(5).toMillis(), RETENTION.plus(LEASE).toMillis());
            assertThat(admin(server).hget(store.redisKey(inProgress), "o")).isEqualTo(OLD_OWNER);
            assertThat(firstLayoutKeys(server, prefix)).as("the first layout's keys are gone").isEmpty();
            assertThat(admin(server).hget(prefix + "layout", "v")).as("the marker").isEqualTo("2");
        }
    }

    @ParameterizedTest
    @EnumSource(Server.class)
    void moreRecordsThanOneScanStepAreAllMoved(Server server) {
        String prefix = prefix("many");
        FirstLayoutStore old = new FirstLayoutStore(admin(server), prefix);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 2_500; i++) {
            ids.add("bulk-" + (i % 7) + "|s:" + i);
        }
        old.confirmAll(ids);
        try (RedisIdempotencyStore store = builder(server).keyPrefix(prefix).build()) {
            for (int from = 0; from < ids.size(); from += 250) {
                assertThat(store.acquireAll(ids.subList(from, from + 250))).extracting(Claim::result)
                        .containsOnly(ClaimResult.ALREADY_CONFIRMED);
            }
            assertThat(firstLayoutKeys(server, prefix)).isEmpty();
        }
    }

    @ParameterizedTest
    @EnumSource(Server.class)
    void aRecordAlreadyInTheNewLayoutWinsAndOnceMarkedThePrefixIsNotScannedAgain(Server server) {
        String prefix = prefix("marker");
        String id = "orders|s:both";
        try (RedisIdempotencyStore store = builder(server).keyPrefix(prefix).build()) {
            assertThat(store.acquire(id).result()).isEqualTo(ClaimResult.CLAIMED);
        }
        // a first-layout record of the same id, and no marker: the layout-2 record (newer) must not be overwritten
        admin(server).del(prefix + "layout");
        FirstLayoutStore old = new FirstLayoutStore(admin(server), prefix);
        old.confirm(id);
        try (RedisIdempotencyStore store = builder(server).keyPrefix(prefix).build()) {
            assertThat(store.isConfirmed(id)).isFalse();
            assertThat(firstLayoutKeys(server, prefix)).isEmpty();
        }
        // with the marker there, a build reads only the marker: a first-layout key written now stays where it is
        old.confirm("orders|s:late");
        try (RedisIdempotencyStore store = builder(server).keyPrefix(prefix).build()) {
            assertThat(store.isConfirmed("orders|s:late")).isFalse();
            assertThat(firstLayoutKeys(server, prefix)).containsExactly(old.key("orders|s:late"));
        }
    }

    @ParameterizedTest
    @EnumSource(Server.class)
    void aMarkerOfAnotherLayoutStopsTheBuild(Server server) {
        String prefix = prefix("later");
        admin(server).hset(prefix + "layout", "v", "3");
        assertThatThrownBy(() -> builder(server).keyPrefix(prefix).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("key layout 3").hasMessageContaining(prefix + "layout");
    }

    private static String prefix(String name) {
        return "migration-" + name + "-" + UUID.randomUUID().toString().substring(0, 8) + ":";
    }

    private static List<String> firstLayoutKeys(Server server, String prefix) {
        List<String> keys = new ArrayList<>();
        RedisClusterCommands<String, String> admin = admin(server);
        ScanIterator<String> scan = ScanIterator.scan(admin, KeyScanArgs.Builder.limit(1000).match(prefix + "{*"));
        scan.forEachRemaining(keys::add);
        return keys;
    }

    /**
     * What the store of the first key layout wrote: its key rule and its calls (script and arguments) for acquire,
     * confirm (by claim and by identifier) and release, with its defaults-like lease and retention.
     */
    private static final class FirstLayoutStore {

        private final RedisClusterCommands<String, String> redis;
        private final String prefix;

        FirstLayoutStore(RedisClusterCommands<String, String> redis, String prefix) {
            this.redis = redis;
            this.prefix = prefix;
        }

        String key(String id) {
            return prefix + '{' + id + '}';
        }

        Claim acquire(String id) {
            List<Object> r = run(RedisScript.ACQUIRE, id, OLD_OWNER, ms(LEASE), ms(RETENTION), "");
            ClaimResult result = switch (((Number) r.get(0)).intValue()) {
                case 1 -> ClaimResult.CLAIMED;
                case 2 -> ClaimResult.ALREADY_CONFIRMED;
                default -> ClaimResult.IN_PROGRESS;
            };
            return new Claim(id, result, ((Number) r.get(1)).intValue());
        }

        void confirm(Claim claim) {
            run(RedisScript.CONFIRM, claim.messageId(), OLD_OWNER, ms(RETENTION), Integer.toString(claim.attempt()));
        }

        void confirm(String id) {
            run(RedisScript.CONFIRM, id, "", ms(RETENTION), "0");
        }

        void confirmAll(List<String> ids) {
            ids.forEach(this::confirm);
        }

        void release(Claim claim) {
            run(RedisScript.RELEASE, claim.messageId(), OLD_OWNER, ms(RETENTION), Integer.toString(claim.attempt()));
        }

        private List<Object> run(RedisScript script, String id, String... args) {
            return redis.eval(script.text(), ScriptOutputType.MULTI, new String[] {key(id)}, args);
        }

        private static String ms(Duration d) {
            return Long.toString(d.toMillis());
        }
    }
}

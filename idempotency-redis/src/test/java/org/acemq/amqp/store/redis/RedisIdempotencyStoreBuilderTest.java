package org.acemq.amqp.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;

import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.store.redis.internal.RedisScript;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;

/** The builder's checks, and a store that cannot reach Redis; no Redis server is needed. */
class RedisIdempotencyStoreBuilderTest {

    private static RedisClient client;

    @BeforeAll
    static void createClient() throws IOException {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = socket.getLocalPort();
        }
        client = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(closedPort)
                .withTimeout(Duration.ofSeconds(2)).build());
    }

    @AfterAll
    static void shutdownClient() {
        client.shutdown();
    }

    @Test
    void settingsAreCheckedAsTheyArrive() {
        RedisIdempotencyStore.Builder builder = RedisIdempotencyStore.builder(client);
        assertThatThrownBy(() -> builder.keyPrefix("a{b")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("keyPrefix must not hold '{' or '}', but was 'a{b'");
        assertThatThrownBy(() -> builder.lease(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lease must be > 0, but was PT0S");
        assertThatThrownBy(() -> builder.retention(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("retention must be > 0, but was PT-1S");
        assertThatThrownBy(() -> builder.timeout(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> builder.owner(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RedisIdempotencyStore.builder((RedisClient) null))
                .isInstanceOf(NullPointerException.class);
    }

    @Test
    void retentionShorterThanTheLeaseIsRefusedBeforeConnecting() {
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).lease(Duration.ofMinutes(2))
                .retention(Duration.ofMinutes(1)).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retention must be >= lease (PT2M), but was PT1M");
    }

    @Test
    void aRedisThatCannotBeReachedIsAnUnavailableStore() {
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).build())
                .isInstanceOf(StoreUnavailableException.class)
                .hasMessageStartingWith("cannot connect to Redis");
    }

    @Test
    void scriptsAreNamedByTheSha1OfTheirText() {
        assertThat(RedisScript.ACQUIRE.sha()).hasSize(40).matches("[0-9a-f]{40}");
        assertThat(RedisScript.ACQUIRE.text()).contains("redis.call('TIME')");
        assertThat(java.util.List.of(RedisScript.ACQUIRE, RedisScript.CONFIRM, RedisScript.RELEASE,
                RedisScript.RENEW, RedisScript.READ, RedisScript.RESET)).extracting(RedisScript::sha)
                .doesNotHaveDuplicates();
    }
}

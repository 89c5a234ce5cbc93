package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;
import org.acemq.amqp.store.redis.RedisServers;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The starter with {@code acemq.store.type=redis} on a real Redis (found or started as the Redis store's own tests do:
 * {@link RedisServers}): listeners on embedded Artemis handle each message once with the records under the configured
 * key prefix, the store on {@code acemq.store.redis.uri} or on the application's {@link LettuceConnectionFactory},
 * health following the store, and settings the store cannot use failing startup with a message naming them.
 */
@Timeout(180)
class RedisStarterIT {

    static EmbeddedArtemis broker;
    static RedisURI redis;
    static RedisClient inspector;
    static StatefulRedisConnection<String, String> connection;
    final List<ConfigurableApplicationContext> apps = new ArrayList<>();
    /** The test class path has JDBC drivers and migration tools; these applications have no database. */
    static final List<String> NO_DATABASE = List.of(
            "spring.autoconfigure.exclude=org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "management.health.acemq.enabled=true");

    @BeforeAll
    static void start() {
        broker = SharedBroker.get();
        redis = RedisServers.standalone();
        inspector = RedisClient.create(redis);
        connection = inspector.connect();
    }

    @AfterAll
    static void stop() {
        connection.close();
        inspector.shutdown();
    }

    @AfterEach
    void closeApps() {
        apps.forEach(ConfigurableApplicationContext::close);
    }

    static RedisCommands<String, String> redis() {
        return connection.sync();
    }

    static String uri() {
        return "redis://" + redis.getHost() + ":" + redis.getPort();
    }

    /** A key prefix of this test's own (a shared ACEMQ_TEST_REDIS_URL server may hold other tests' records). */
    static String prefix(String hint) {
        return "acemq-it:" + hint + ":" + UUID.randomUUID() + ":";
    }

    ConfigurableApplicationContext start(Class<?> app, String... properties) {
        List<String> all = new ArrayList<>(List.of(SharedBroker.connectionProperties()));
        all.addAll(NO_DATABASE);
        all.add("acemq.store.type=redis");
        all.addAll(List.of(properties));
        ConfigurableApplicationContext context = new SpringApplicationBuilder(app).web(WebApplicationType.NONE)
                .properties(all.toArray(String[]::new)).run();
        apps.add(context);
        return context;
    }

    static void storeWorks(IdempotencyStore store) {
        String id = "s:" + UUID.randomUUID();
        assertThat(store.tryClaim(id)).isEqualTo(ClaimResult.CLAIMED);
        store.confirm(id);
        assertThat(store.tryClaim(id)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    /** Counts the runs of each body. */
    static class Recorder {
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

        @AcemqListener(address = "${test.queue}", concurrency = "4")
        void onMessage(String body) {
            runs.computeIfAbsent(body, b -> new AtomicInteger()).incrementAndGet();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Recorder.class)
    static class RecorderApp {
    }

    /** The application's own Spring Data Redis connection factory, on the test's Redis. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Recorder.class)
    static class FactoryApp {
        @Bean
        LettuceConnectionFactory redisConnectionFactory() {
            return new LettuceConnectionFactory(new RedisStandaloneConfiguration(redis.getHost(), redis.getPort()));
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class StoreOnlyApp {
    }

    /** Sends {@code count} messages and a copy of each of the first half; waits until the queue is drained. */
    static void sendWithDuplicates(String queue, int count, Recorder recorder) {
        try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), SharedBroker.USER,
                SharedBroker.PASSWORD)) {
            for (int i = 0; i < count; i++) {
                client.send(queue, AmqpTestClient.message("m-" + i, "body-" + i));
            }
            for (int i = 0; i < count / 2; i++) {
                client.send(queue, AmqpTestClient.message("m-" + i, "body-" + i)); // copies, some while in flight
            }
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> recorder.runs.size() == count
                && broker.messageCount(queue) == 0);
    }

    @Test
    void onAUriEachMessageIsHandledOnceAndItsRecordIsUnderTheConfiguredPrefix() {
        String queue = "redis-uri-" + UUID.randomUUID();
        String prefix = prefix("uri");
        ConfigurableApplicationContext app = start(RecorderApp.class, "test.queue=" + queue,
                "acemq.store.redis.uri=" + uri(), "acemq.store.redis.key-prefix=" + prefix,
                "acemq.store.redis.timeout=2s", "acemq.store.redis.owner=it-owner", "acemq.store.lease=20s",
                "acemq.store.retention=1h");
        RedisIdempotencyStore store = app.getBean(RedisIdempotencyStore.class);
        assertThat(store.keyPrefix()).isEqualTo(prefix);
        assertThat(store.owner()).isEqualTo("it-owner");
        assertThat(store.leaseDuration()).isEqualTo(Duration.ofSeconds(20));
        assertThat(store.retention()).isEqualTo(Duration.ofHours(1));
        assertThat(store.isCluster()).isFalse();
        assertThat(app.getBean(RedisStoreClient.class).owned()).as("the starter's own client").isTrue();

        Recorder recorder = app.getBean(Recorder.class);
        sendWithDuplicates(queue, 40, recorder);
        assertThat(recorder.runs).hasSize(40);
        assertThat(recorder.runs.values()).as("each message handled once, its copies absorbed")
                .allMatch(n -> n.get() == 1);

        // the records (<prefix>v2{<tag>}<identifier>), beside the prefix's key layout marker
        List<String> keys = redis().keys(prefix + "v2{*}*");
        assertThat(keys).hasSize(40);
        assertThat(redis().keys(prefix + "*")).hasSize(41).contains(prefix + "layout");
        for (int i = 0; i < 40; i++) {
            String key = store.redisKey(queue + "|s:m-" + i);
            assertThat(key).startsWith(prefix + "v2{").endsWith("}" + queue + "|s:m-" + i);
            assertThat(keys).contains(key);
            assertThat(redis().hget(key, "s")).as("confirmed: " + key).isEqualTo("d");
            assertThat(redis().hget(key, "o")).isEqualTo("it-owner");
            assertThat(redis().pttl(key)).as("forgotten after the retention").isBetween(1L, 3_600_000L);
        }

        HealthIndicator health = app.getBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN, HealthIndicator.class);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            var h = health.health();
            assertThat(h.getStatus()).isEqualTo(Status.UP);
            assertThat(h.getDetails()).containsEntry("storeReachable", true);
        });

        RedisStoreClient client = app.getBean(RedisStoreClient.class);
        app.close();
        assertThat(client.client().getResources().eventExecutorGroup().isShutdown())
                .as("the starter's own client is shut down with the context").isTrue();
    }

    @Test
    void withoutAUriTheStoreUsesTheApplicationsLettuceConnectionFactory() {
        String queue = "redis-factory-" + UUID.randomUUID();
        String prefix = prefix("factory");
        ConfigurableApplicationContext app = start(FactoryApp.class, "test.queue=" + queue,
                "acemq.store.redis.key-prefix=" + prefix);
        RedisStoreClient client = app.getBean(RedisStoreClient.class);
        LettuceConnectionFactory factory = app.getBean(LettuceConnectionFactory.class);
        assertThat(client.owned()).isFalse();
        assertThat(client.client()).isSameAs(factory.getNativeClient());
        assertThat(client.description()).contains("LettuceConnectionFactory", "standalone");
        RedisIdempotencyStore store = app.getBean(RedisIdempotencyStore.class);
        storeWorks(store);

        Recorder recorder = app.getBean(Recorder.class);
        sendWithDuplicates(queue, 20, recorder);
        assertThat(recorder.runs.values()).allMatch(n -> n.get() == 1);
        assertThat(redis().keys(prefix + "v2{*}" + queue + "|*")).hasSize(20);

        // the application's factory keeps working beside the store, and the store closes before it on shutdown
        try (var own = factory.getConnection()) {
            assertThat(own.ping()).isEqualTo("PONG");
        }
        app.close();
        assertThat(factory.isRunning()).isFalse();
    }

    /** The application's factory on a Redis Cluster. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class ClusterFactoryApp {
        @Bean
        LettuceConnectionFactory redisConnectionFactory() {
            RedisURI node = RedisServers.cluster();
            return new LettuceConnectionFactory(
                    new RedisClusterConfiguration(List.of(node.getHost() + ":" + node.getPort())));
        }
    }

    @Test
    void onClusterNodesOrAClusterConnectionFactoryTheStoreRunsOnTheCluster() {
        RedisURI node = RedisServers.cluster();
        String queue = "redis-cluster-" + UUID.randomUUID();
        String prefix = prefix("cluster");
        ConfigurableApplicationContext app = start(RecorderApp.class, "test.queue=" + queue,
                "acemq.store.redis.cluster-nodes=" + node.getHost() + ":" + node.getPort(),
                "acemq.store.redis.key-prefix=" + prefix);
        RedisIdempotencyStore store = app.getBean(RedisIdempotencyStore.class);
        assertThat(store.isCluster()).isTrue();
        assertThat(app.getBean(RedisStoreClient.class).owned()).isTrue();
        Recorder recorder = app.getBean(Recorder.class);
        sendWithDuplicates(queue, 30, recorder);
        assertThat(recorder.runs.values()).as("each message handled once").allMatch(n -> n.get() == 1);
        for (int i = 0; i < 30; i++) {
            assertThat(store.isConfirmed(queue + "|s:m-" + i)).isTrue();
        }
        app.close();

        ConfigurableApplicationContext viaFactory = start(ClusterFactoryApp.class, "test.queue=unused-"
                + UUID.randomUUID(), "acemq.store.redis.key-prefix=" + prefix("cluster-factory"),
                "acemq.consumer.auto-startup=false");
        RedisStoreClient client = viaFactory.getBean(RedisStoreClient.class);
        assertThat(client.owned()).isFalse();
        assertThat(client.isCluster()).isTrue();
        assertThat(client.description()).contains("LettuceConnectionFactory, cluster");
        RedisIdempotencyStore onFactory = viaFactory.getBean(RedisIdempotencyStore.class);
        assertThat(onFactory.isCluster()).isTrue();
        storeWorks(onFactory);
        assertThat(onFactory.isConfirmed(queue + "|s:m-0")).as("another prefix, other records").isFalse();
    }

    @Test
    void aUriWinsOverTheApplicationsConnectionFactory() {
        ConfigurableApplicationContext app = start(FactoryApp.class, "test.queue=unused-" + UUID.randomUUID(),
                "acemq.store.redis.uri=" + uri(), "acemq.store.redis.key-prefix=" + prefix("both"),
                "acemq.consumer.auto-startup=false");
        RedisStoreClient client = app.getBean(RedisStoreClient.class);
        assertThat(client.owned()).isTrue();
        assertThat(client.client()).isNotSameAs(app.getBean(LettuceConnectionFactory.class).getNativeClient());
    }

    @Test
    void anApplicationsOwnStoreBeanWins() {
        ConfigurableApplicationContext app = new SpringApplicationBuilder(OwnStoreApp.class)
                .web(WebApplicationType.NONE).properties(NO_DATABASE.get(0), "acemq.store.type=redis").run();
        apps.add(app);
        assertThat(app.getBean(IdempotencyStore.class)).isSameAs(OwnStoreApp.STORE);
        assertThat(app.getBeansOfType(RedisStoreClient.class)).isEmpty();
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class OwnStoreApp {
        static final IdempotencyStore STORE = org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore.builder().build();

        @Bean
        IdempotencyStore myStore() {
            return STORE;
        }
    }

    @Test
    void healthGoesDownWhileRedisDoesNotAnswerAndUpWhenItDoesAgain() {
        String queue = "redis-health-" + UUID.randomUUID();
        ConfigurableApplicationContext app = start(RecorderApp.class, "test.queue=" + queue,
                "acemq.store.redis.uri=" + uri(), "acemq.store.redis.key-prefix=" + prefix("health"),
                "acemq.store.redis.timeout=300ms", "acemq.consumer.max-store-retry-delay=300ms", "acemq.store.lease=3s");
        HealthIndicator health = app.getBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN, HealthIndicator.class);
        await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.UP));
        Recorder recorder = app.getBean(Recorder.class);

        // Redis holds every client's commands for 8 s, then answers again by itself
        redis().clientPause(8_000);
        try (AmqpTestClient client = AmqpTestClient.connect(broker.host(), broker.port(), SharedBroker.USER,
                SharedBroker.PASSWORD)) {
            client.send(queue, AmqpTestClient.message("m-1", "while Redis is paused"));
            await().atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
                var h = health.health();
                assertThat(h.getStatus()).isEqualTo(Status.DOWN);
                assertThat(h.getDetails()).containsEntry("storeReachable", false);
            });
            assertThat(recorder.runs).as("nothing processed without the store").isEmpty();
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.UP));
        // The claim the store stopped waiting for was still run by Redis when the pause ended: the message is
        // IN_PROGRESS under that claim until its lease (3 s here) lapses, then handled once.
        await().atMost(Duration.ofSeconds(30)).until(() -> recorder.runs.containsKey("while Redis is paused"));
        assertThat(recorder.runs.get("while Redis is paused").get()).isEqualTo(1);
    }

    // ------------------------------------------------------------------------------------------- wrong settings

    static String startupFailure(Class<?> app, String... properties) {
        Throwable failure = null;
        try {
            start0(app, properties);
        } catch (RuntimeException e) {
            failure = e;
        }
        assertThat(failure).as("startup fails").isNotNull();
        StringBuilder messages = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    static void start0(Class<?> app, String... properties) {
        List<String> all = new ArrayList<>(List.of(SharedBroker.connectionProperties()));
        all.addAll(NO_DATABASE);
        all.add("acemq.store.type=redis");
        all.add("acemq.consumer.auto-startup=false");
        all.addAll(List.of(properties));
        new SpringApplicationBuilder(app).web(WebApplicationType.NONE).properties(all.toArray(String[]::new)).run()
                .close();
    }

    static int freePort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Test
    void settingsTheStoreCannotUseFailStartupWithAMessageNamingThem() throws Exception {
        assertThat(startupFailure(StoreOnlyApp.class, "acemq.store.redis.uri=" + uri(),
                "acemq.store.redis.key-prefix=orders{seen}:"))
                .contains("acemq.store: keyPrefix must not hold '{' or '}', but was 'orders{seen}:'");
        assertThat(startupFailure(StoreOnlyApp.class, "acemq.store.redis.uri=" + uri(), "acemq.store.lease=1h",
                "acemq.store.retention=10m")).contains("acemq.store: retention must be >= lease");
        assertThat(startupFailure(StoreOnlyApp.class, "acemq.store.redis.uri=" + uri(),
                "acemq.store.redis.cluster-nodes=" + uri()))
                .contains("acemq.store.redis: set uri (a standalone or Sentinel-managed Redis) or cluster-nodes");
        assertThat(startupFailure(StoreOnlyApp.class, "acemq.store.redis.uri=http://" + redis.getHost()))
                .contains("acemq.store.redis.uri: not a Redis URI");
        assertThat(startupFailure(StoreOnlyApp.class))
                .contains("acemq.store.type=redis needs acemq.store.redis.uri (or .cluster-nodes) or a Spring Data "
                        + "Redis LettuceConnectionFactory bean, but the application has neither");
        int nobody = freePort();
        assertThat(startupFailure(StoreOnlyApp.class, "acemq.store.redis.uri=redis://127.0.0.1:" + nobody,
                "acemq.store.redis.timeout=1s"))
                .contains("acemq.store.type=redis: cannot reach Redis (acemq.store.redis.uri redis://127.0.0.1:"
                        + nobody + ")");
        assertThat(startupFailure(StoreOnlyApp.class, "acemq.store.type=rediss"))
                .contains("acemq.store.type").contains("rediss");
    }
}

package org.acemq.amqp.spring.internal;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.spring.AcemqProperties;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;

/** Builds the Redis store and its client from {@code acemq.store.*} (see {@link AcemqRedisStoreConfiguration}). */
final class RedisStores {

    /** How often a cluster client of the starter's own re-reads the topology (besides the adaptive triggers). */
    static final Duration CLUSTER_TOPOLOGY_REFRESH = Duration.ofSeconds(10);

    private RedisStores() {
    }

    /**
     * The client from {@code acemq.store.redis.uri} or {@code .cluster-nodes} (the starter's own), else
     * {@code otherwise} (the application's connection factory).
     */
    static RedisStoreClient client(AcemqProperties.Redis p, Supplier<RedisStoreClient> otherwise) {
        boolean hasUri = p.getUri() != null && !p.getUri().isBlank();
        List<String> nodes = p.getClusterNodes() == null ? List.of()
                : p.getClusterNodes().stream().filter(n -> n != null && !n.isBlank()).toList();
        if (hasUri && !nodes.isEmpty()) {
            throw new IllegalStateException("acemq.store.redis: set uri (a standalone or Sentinel-managed Redis) or "
                    + "cluster-nodes (a Redis Cluster), not both");
        }
        Duration timeout = p.getTimeout() != null ? p.getTimeout() : RedisIdempotencyStore.DEFAULT_TIMEOUT;
        if (hasUri) {
            RedisURI uri = parse("acemq.store.redis.uri", p.getUri().trim(), timeout);
            return new RedisStoreClient(RedisClient.create(uri), true, "acemq.store.redis.uri " + describe(uri));
        }
        if (!nodes.isEmpty()) {
            List<RedisURI> uris = new ArrayList<>();
            for (String node : nodes) {
                String text = node.trim();
                uris.add(parse("acemq.store.redis.cluster-nodes", text.contains("://") ? text : "redis://" + text,
                        timeout));
            }
            RedisClusterClient client = RedisClusterClient.create(uris);
            client.setOptions(ClusterClientOptions.builder()
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enablePeriodicRefresh(CLUSTER_TOPOLOGY_REFRESH)
                            .enableAllAdaptiveRefreshTriggers()
                            .build())
                    .build());
            return new RedisStoreClient(client, true, "acemq.store.redis.cluster-nodes "
                    + uris.stream().map(RedisStores::describe).toList());
        }
        return otherwise.get();
    }

    /**
     * A URI, with the store's timeout as Lettuce's command timeout unless the URI sets one ({@code ?timeout=}): a
     * command then leaves Lettuce's queue when the store stops waiting for it, instead of after Lettuce's 60 s.
     */
    private static RedisURI parse(String property, String text, Duration timeout) {
        RedisURI uri;
        try {
            uri = RedisURI.create(text);
        } catch (RuntimeException e) {
            throw new IllegalStateException(property + ": not a Redis URI (redis://host:port, rediss://host:port, "
                    + "redis-sentinel://host:port#master): " + e.getMessage(), e);
        }
        if (!text.contains("timeout=")) {
            uri.setTimeout(timeout);
        }
        return uri;
    }

    /** @return host and port (or the Sentinel master and nodes), never the password */
    static String describe(RedisURI uri) {
        if (uri.getSentinelMasterId() != null) {
            return "sentinel master " + uri.getSentinelMasterId() + " via " + uri.getSentinels().stream()
                    .map(s -> s.getHost() + ":" + s.getPort()).toList();
        }
        if (uri.getSocket() != null) {
            return "unix:" + uri.getSocket();
        }
        return (uri.isSsl() ? "rediss://" : "redis://") + uri.getHost() + ":" + uri.getPort()
                + (uri.getDatabase() != 0 ? "/" + uri.getDatabase() : "");
    }

    /** Applies {@code acemq.store.*} to the store's builder (every setting the builder has; see SettingsCoverageTest). */
    static RedisIdempotencyStore.Builder applyTo(RedisIdempotencyStore.Builder b, AcemqProperties.Store p) {
        AcemqProperties.Redis redis = p.getRedis();
        if (p.getLease() != null) {
            b.lease(p.getLease());
        }
        if (p.getRetention() != null) {
            b.retention(p.getRetention());
        }
        if (redis.getKeyPrefix() != null) {
            b.keyPrefix(redis.getKeyPrefix());
        }
        if (redis.getTimeout() != null) {
            b.timeout(redis.getTimeout());
        }
        if (redis.getOwner() != null) {
            b.owner(redis.getOwner());
        }
        return b;
    }

    /** The store, on its own connection from {@code client}; a setting it refuses or a Redis it cannot reach fails. */
    static RedisIdempotencyStore build(AcemqProperties.Store p, RedisStoreClient client) {
        RedisIdempotencyStore.Builder b = client.client() instanceof RedisClusterClient cluster
                ? RedisIdempotencyStore.builder(cluster) : RedisIdempotencyStore.builder((RedisClient) client.client());
        try {
            return applyTo(b, p).build();
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("acemq.store: " + e.getMessage()
                    + " (acemq.store.lease, .retention, acemq.store.redis.key-prefix, .timeout, .owner)", e);
        } catch (StoreUnavailableException e) {
            throw new IllegalStateException("acemq.store.type=redis: cannot reach Redis (" + client.description()
                    + "): " + e.getMessage(), e);
        }
    }
}

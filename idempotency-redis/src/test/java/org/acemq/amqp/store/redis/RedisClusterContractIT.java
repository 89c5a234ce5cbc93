package org.acemq.amqp.store.redis;

import org.junit.jupiter.api.AfterAll;

import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;

/**
 * The store contract on a three-master Redis Cluster ({@link RedisServers#cluster()}): identifiers spread over the
 * masters, and batches are split into one script per hash slot.
 */
class RedisClusterContractIT extends RedisContractBase {

    private static RedisClusterClient client;
    private static StatefulRedisClusterConnection<String, String> admin;

    private static synchronized RedisClusterClient client() {
        if (client == null) {
            client = RedisServers.clusterClient(RedisServers.cluster());
            admin = client.connect();
        }
        return client;
    }

    @AfterAll
    static synchronized void closeClient() {
        if (client != null) {
            admin.close();
            client.shutdown();
            client = null;
        }
    }

    @Override
    RedisIdempotencyStore.Builder builder() {
        return RedisIdempotencyStore.builder(client());
    }

    @Override
    @SuppressWarnings("unchecked")
    RedisAdvancedClusterCommands<String, String> admin() {
        client();
        return admin.sync();
    }
}

package org.acemq.amqp.store.redis;

import org.junit.jupiter.api.AfterAll;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/** The store contract on a standalone Redis server ({@link RedisServers#standalone()}): batches are one script. */
class RedisStandaloneContractIT extends RedisContractBase {

    private static RedisClient client;
    private static StatefulRedisConnection<String, String> admin;

    private static synchronized RedisClient client() {
        if (client == null) {
            client = RedisClient.create(RedisServers.standalone());
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
    RedisCommands<String, String> admin() {
        client();
        return admin.sync();
    }
}

package org.acemq.amqp.spring.internal;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import java.util.Objects;
import org.springframework.beans.factory.DisposableBean;

/**
 * The Lettuce client the Redis store is built on, and whether the starter owns it. A client the starter made from
 * {@code acemq.store.redis.*} is shut down when the context closes (after the store, which depends on this bean); a
 * Spring Data Redis factory's client stays the factory's.
 */
final class RedisStoreClient implements DisposableBean {

    private final AbstractRedisClient client;
    private final boolean owned;
    private final String description;

    RedisStoreClient(AbstractRedisClient client, boolean owned, String description) {
        if (!(client instanceof RedisClient) && !(client instanceof RedisClusterClient)) {
            throw new IllegalStateException("the Redis store needs a Lettuce RedisClient or RedisClusterClient, not "
                    + client.getClass().getName() + " (" + description + ")");
        }
        this.client = Objects.requireNonNull(client, "client");
        this.owned = owned;
        this.description = description;
    }

    /** @return the client */
    AbstractRedisClient client() {
        return client;
    }

    /** @return whether the client is a cluster client */
    boolean isCluster() {
        return client instanceof RedisClusterClient;
    }

    /** @return whether the starter made (and shuts down) this client */
    boolean owned() {
        return owned;
    }

    /** @return where the client came from, for messages (no password) */
    String description() {
        return description;
    }

    @Override
    public void destroy() {
        if (owned) {
            client.shutdown();
        }
    }

    @Override
    public String toString() {
        return "RedisStoreClient[" + description + "]";
    }
}

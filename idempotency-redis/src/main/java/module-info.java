/**
 * A Redis-backed {@link org.acemq.amqp.api.LeasedIdempotencyStore}: {@link
 * org.acemq.amqp.store.redis.RedisIdempotencyStore}, over a standalone Redis server or a Redis Cluster, through the
 * Lettuce client.
 */
module org.acemq.amqp.store.redis {
    requires transitive org.acemq.amqp.api;
    requires transitive lettuce.core;
    requires org.slf4j;

    exports org.acemq.amqp.store.redis;
}

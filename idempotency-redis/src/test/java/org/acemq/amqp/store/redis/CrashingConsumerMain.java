package org.acemq.amqp.store.redis;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;

import io.lettuce.core.RedisClient;

/**
 * A consumer in a process of its own, for {@link RedisCrashIT}: on the Redis store, each handler prints
 * {@code started <key>} and never returns, until the test kills the process.
 *
 * <p>Arguments: broker host, broker port, Redis URI, key prefix, queue, lease in ms.
 */
public final class CrashingConsumerMain {

    private CrashingConsumerMain() {
    }

    public static void main(String[] args) {
        RedisClient client = RedisClient.create(args[2]);
        RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).keyPrefix(args[3])
                .lease(Duration.ofMillis(Long.parseLong(args[5]))).owner("crashing").build();
        AmqpConsumer.builder()
                .name("crashing")
                .connection(ConnectionSettings.builder(args[0], Integer.parseInt(args[1])).build())
                .store(store)
                .subscribe(Subscription.builder(args[4], envelope -> {
                    System.out.println("started " + envelope.id());
                    System.out.flush();
                    while (true) {
                        LockSupport.park();
                    }
                }).concurrency(4).prefetch(4).build())
                .start();
        System.out.println("ready");
        System.out.flush();
    }
}

package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.h2.jdbcx.JdbcConnectionPool;

/**
 * A consumer in a process of its own, for {@link H2CrashIT}: on the JDBC store with an H2 database reached through
 * H2's TCP server, each handler prints {@code started <key>} and never returns, until the test kills the process.
 *
 * <p>Arguments: broker host, broker port, JDBC URL, queue, lease in ms.
 */
public final class H2CrashingConsumerMain {

    private H2CrashingConsumerMain() {
    }

    public static void main(String[] args) {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(JdbcConnectionPool.create(args[2], "sa", ""))
                .lease(Duration.ofMillis(Long.parseLong(args[4]))).build();
        AmqpConsumer.builder()
                .name("crashing")
                .connection(ConnectionSettings.builder(args[0], Integer.parseInt(args[1])).build())
                .store(store)
                .subscribe(Subscription.builder(args[3], envelope -> {
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

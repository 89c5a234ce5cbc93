package org.acemq.amqp.consumer;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.h2.jdbcx.JdbcConnectionPool;

/**
 * An ordered consumer in a process of its own, for {@link OrderedTwoJvmsIT}: {@code orderBy(KeySource.groupId())} at
 * concurrency 8 on the JDBC store (an H2 database reached through H2's TCP server, shared with the other process). Its
 * handler takes 0-2 ms and fails 10 % of its runs transiently; each successful run is recorded as an effect with its
 * start and end on {@link System#nanoTime()} (on Linux the system-wide monotonic clock, so the test can put the
 * effects of both processes on one time line).
 *
 * <p>Arguments: broker host, broker port, JDBC URL, queue, name. Standard output: {@code READY} once started; on the
 * line {@code STOP} on standard input the consumer closes (gracefully: running handlers finish, the rest is released)
 * and prints {@code E <group> <seq> <startNanos> <endNanos>} per effect, then {@code DONE}.
 */
public final class OrderedConsumerMain {

    private OrderedConsumerMain() {
    }

    public static void main(String[] args) throws Exception {
        Queue<String> effects = new ConcurrentLinkedQueue<>();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(JdbcConnectionPool.create(args[2], "sa", ""))
                .build();
        AmqpConsumer consumer = AmqpConsumer.builder()
                .name(args[4])
                .connection(ConnectionSettings.builder(args[0], Integer.parseInt(args[1])).build())
                .store(store)
                .shutdownTimeout(Duration.ofSeconds(20))
                .subscribe(Subscription.builder(args[3], envelope -> {
                    long start = System.nanoTime();
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    LockSupport.parkNanos(random.nextLong(2_000_001));
                    if (random.nextInt(100) < 10) {
                        throw new IllegalStateException("test: transient failure");
                    }
                    String id = String.valueOf(envelope.messageId());
                    effects.add("E " + envelope.groupId() + " " + id.substring(id.lastIndexOf('-') + 1) + " " + start
                            + " " + System.nanoTime());
                }).orderBy(KeySource.groupId()).concurrency(8).maxAttempts(50)
                        .retryBackoff(RetryBackoff.of(Duration.ofMillis(5), Duration.ofMillis(20), 2.0, 0.5)).build())
                .start();
        System.out.println("READY");
        System.out.flush();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null && !line.equals("STOP")) {
                // wait for the test
            }
        }
        consumer.close();
        StringBuilder out = new StringBuilder();
        for (String e : effects) {
            out.append(e).append('\n');
        }
        System.out.print(out);
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }
}

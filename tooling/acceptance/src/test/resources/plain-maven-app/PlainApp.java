import io.lettuce.core.RedisClient;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;

/**
 * The application PlainMavenAppIT builds with Maven from the README's dependency blocks alone: it consumes a queue
 * through the Redis store until every delivery is accepted (processed or absorbed as a duplicate), then prints what
 * ran and which Netty it ran on.
 *
 * <p>Arguments: broker host, broker port, queue, distinct messages, deliveries in all, Redis URI, key prefix.
 */
public final class PlainApp {

    public static void main(String[] args) throws Exception {
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String queue = args[2];
        int distinct = Integer.parseInt(args[3]);
        int deliveries = Integer.parseInt(args[4]);
        String redisUri = args[5];
        String prefix = args[6];

        AtomicInteger runs = new AtomicInteger();
        Set<String> bodies = ConcurrentHashMap.newKeySet();
        Map<SettleReason, AtomicInteger> accepted = new ConcurrentHashMap<>();
        CountDownLatch allAccepted = new CountDownLatch(deliveries);
        ConsumerObserver observer = new ConsumerObserver() {
            @Override
            public void settled(String subscription, Outcome outcome, SettleReason reason) {
                if (outcome == Outcome.ACCEPTED) {
                    accepted.computeIfAbsent(reason, r -> new AtomicInteger()).incrementAndGet();
                    allAccepted.countDown();
                }
            }
        };

        RedisClient client = RedisClient.create(redisUri);
        boolean done;
        try (RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).keyPrefix(prefix).build()) {
            AmqpConsumer consumer = AmqpConsumer.builder()
                    .broker(host, port)
                    .store(store)
                    .observer(observer)
                    .subscribe(Subscription.builder(queue, envelope -> {
                        runs.incrementAndGet();
                        bodies.add(envelope.body(String.class));
                    }).concurrency(4).build())
                    .start();
            done = allAccepted.await(90, TimeUnit.SECONDS);
            consumer.close();
        } finally {
            client.shutdown();
        }
        System.out.println("runs=" + runs.get());
        System.out.println("distinct=" + bodies.size());
        System.out.println("processed=" + count(accepted, SettleReason.PROCESSED));
        System.out.println("duplicates=" + count(accepted, SettleReason.DUPLICATE));
        io.netty.util.Version.identify().forEach((artifact, version) ->
                System.out.println("netty-loaded " + artifact + " " + version.artifactVersion()));
        System.exit(done && bodies.size() == distinct ? 0 : 1);
    }

    private static int count(Map<SettleReason, AtomicInteger> counts, SettleReason reason) {
        AtomicInteger n = counts.get(reason);
        return n == null ? 0 : n.get();
    }
}

package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;

/**
 * One consumer process of the scale-out benchmark ({@link ScaleOutBenchmark}): an {@link AmqpConsumer} with a no-op
 * handler and the store's defaults, on the queue and the store (table, Redis server or cluster) every other consumer
 * process of the measurement shares. Driven over stdin/stdout by the parent:
 *
 * <ol>
 * <li>builds the store, consumes its own warm-up queue to the end (not measured), prints {@code READY};</li>
 * <li>on {@code GO} starts the measured consumer, and prints {@code PROGRESS k} (messages settled as processed so
 *     far) at most every 20 ms while the count moves;</li>
 * <li>on {@code STOP} closes the consumer and prints one {@code RESULT} line: messages settled as processed, handler
 *     calls, deliveries settled any other way, ids its own handler saw twice, the wall-clock time (epoch µs) of its
 *     last settle, and the message indices it handled as a Base64 bit set, so the parent can check that no message
 *     was handled twice across processes and none was missed. Then it exits.</li>
 * </ol>
 *
 * Message ids are {@code queue:index}, as {@link EndToEndBenchmark#fill} sends them.
 *
 * <pre>
 * ScaleOutConsumerMain --store postgres|mariadb|redis|redis-cluster --port BROKER_PORT --queue Q
 *     --warmup-queue WQ --warmup N --threads 4 --prefetch 996 --name NAME
 *     [--jdbc-url U --jdbc-user U --jdbc-password P --table T --pool 8 | --redis-port P]
 * </pre>
 */
public final class ScaleOutConsumerMain {

    private ScaleOutConsumerMain() {
    }

    /** Counts deliveries settled as processed and remembers when the last one was. */
    private static final class Settles implements ConsumerObserver {
        final AtomicInteger processed = new AtomicInteger();
        final AtomicInteger other = new AtomicInteger();
        volatile long lastNanos = System.nanoTime();

        @Override
        public void settled(String subscription, Outcome outcome, SettleReason reason) {
            if (outcome == Outcome.ACCEPTED && reason == SettleReason.PROCESSED) {
                processed.incrementAndGet();
                lastNanos = System.nanoTime();
            } else {
                other.incrementAndGet();
            }
        }
    }

    /** The no-op handler, which only records the message's index (and an index it sees a second time). */
    private static final class Recorder implements MessageHandler {
        final BitSet seen = new BitSet();
        final AtomicInteger calls = new AtomicInteger();
        int twice;

        @Override
        public void handle(Envelope envelope) {
            calls.incrementAndGet();
            String id = String.valueOf(envelope.messageId());
            int index = Integer.parseInt(id.substring(id.lastIndexOf(':') + 1));
            synchronized (this) {
                if (seen.get(index)) {
                    twice++;
                }
                seen.set(index);
            }
        }
    }

    /**
     * @param args see the class comment
     * @throws Exception if the consumer cannot run (the parent then sees no RESULT line and a non-zero exit)
     */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            o.put(args[i], args[i + 1]);
        }
        String kind = o.get("--store");
        int port = Integer.parseInt(o.get("--port"));
        int threads = Integer.parseInt(o.getOrDefault("--threads", "4"));
        int prefetch = Integer.parseInt(o.getOrDefault("--prefetch", Integer.toString(EndToEndBenchmark.CREDIT - 4)));
        String name = o.getOrDefault("--name", "scaleout");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

        HikariDataSource pool = null;
        AutoCloseable redisClient = null;
        IdempotencyStore store;
        switch (kind) {
            case "postgres", "mariadb" -> {
                String password = o.getOrDefault("--jdbc-password", "");
                pool = BenchEnv.pool(o.get("--jdbc-url"), o.get("--jdbc-user"), password.isEmpty() ? null : password,
                        Integer.parseInt(o.getOrDefault("--pool", "8")), name);
                // the parent made the table (createSchema) before starting the consumer processes
                store = JdbcIdempotencyStore.builder(pool).tableName(o.get("--table")).build();
            }
            case "redis" -> {
                RedisClient c = RedisClient.create(RedisURI.create(EndToEndBenchmark.HOST,
                        Integer.parseInt(o.get("--redis-port"))));
                redisClient = c::shutdown;
                store = RedisIdempotencyStore.builder(c).build();
            }
            case "redis-cluster" -> {
                RedisClusterClient c = BenchRedis.clusterClient(EndToEndBenchmark.HOST,
                        Integer.parseInt(o.get("--redis-port")));
                redisClient = c::shutdown;
                store = RedisIdempotencyStore.builder(c).build();
            }
            default -> throw new IllegalArgumentException("unknown --store " + kind
                    + "; known: postgres, mariadb, redis, redis-cluster");
        }
        try {
            int warmup = Integer.parseInt(o.getOrDefault("--warmup", "0"));
            if (warmup > 0) {
                warmUp(o.get("--warmup-queue"), warmup, port, threads, prefetch, store, name);
            }
            System.out.println("READY");
            System.out.flush();
            expect(in, "GO");
            measure(in, o.get("--queue"), port, threads, prefetch, store, name);
        } finally {
            if (store instanceof AutoCloseable c) {
                c.close();
            }
            if (redisClient != null) {
                redisClient.close();
            }
            if (pool != null) {
                pool.close();
            }
        }
        System.exit(0);
    }

    private static void warmUp(String queue, int n, int port, int threads, int prefetch, IdempotencyStore store,
                               String name) throws InterruptedException {
        Settles settles = new Settles();
        AmqpConsumer consumer = consumer(queue, port, threads, prefetch, store, name + "-warmup", e -> { }, settles);
        try {
            while (settles.processed.get() < n) {
                if (System.nanoTime() - settles.lastNanos > EndToEndBenchmark.STALL.toNanos()) {
                    throw new IllegalStateException(name + ": warm-up stalled at " + settles.processed.get() + " of "
                            + n + "; " + consumer.health());
                }
                Thread.sleep(20);
            }
        } finally {
            consumer.close(Duration.ofSeconds(30));
        }
    }

    private static void measure(BufferedReader in, String queue, int port, int threads, int prefetch,
                                IdempotencyStore store, String name) throws Exception {
        Settles settles = new Settles();
        Recorder recorder = new Recorder();
        AmqpConsumer consumer = consumer(queue, port, threads, prefetch, store, name, recorder, settles);
        Thread progress = new Thread(() -> {
            int reported = -1;
            try {
                while (!Thread.currentThread().isInterrupted()) {
                    int now = settles.processed.get();
                    if (now != reported) {
                        System.out.println("PROGRESS " + now);
                        System.out.flush();
                        reported = now;
                    }
                    Thread.sleep(20);
                }
            } catch (InterruptedException stop) {
                // STOP came
            }
        }, name + "-progress");
        progress.setDaemon(true);
        progress.start();
        try {
            expect(in, "STOP");
        } finally {
            progress.interrupt();
            progress.join();
            consumer.close(Duration.ofSeconds(30));
        }
        Instant now = Instant.now();
        long nowNanos = System.nanoTime();
        long nowMicros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
        long lastMicros = nowMicros - (nowNanos - settles.lastNanos) / 1_000;
        String line;
        synchronized (recorder) {
            line = resultLine(settles.processed.get(), recorder.calls.get(), settles.other.get(), recorder.twice,
                    lastMicros, recorder.seen);
        }
        System.out.println(line);
        System.out.flush();
    }

    /**
     * @return the {@code RESULT} line the parent reads ({@link ScaleOutBenchmark.ChildResult#parse}): the counts, the
     *     epoch µs of the last settle and the handled message indices as a Base64 bit set
     */
    static String resultLine(int processed, int handled, int other, int twice, long lastMicros, BitSet ids) {
        return "RESULT processed=" + processed + " handled=" + handled + " other=" + other + " twice=" + twice
                + " lastMicros=" + lastMicros + " ids=" + java.util.Base64.getEncoder().encodeToString(ids.toByteArray());
    }

    private static AmqpConsumer consumer(String queue, int port, int threads, int prefetch, IdempotencyStore store,
                                         String name, MessageHandler handler, ConsumerObserver observer) {
        return AmqpConsumer.builder().name(name).broker(EndToEndBenchmark.HOST, port).store(store).observer(observer)
                .subscribe(Subscription.builder(queue, handler).concurrency(threads).prefetch(prefetch).build())
                .start();
    }

    private static void expect(BufferedReader in, String word) throws java.io.IOException {
        String line = in.readLine();
        if (line == null || !line.trim().equals(word)) {
            throw new IllegalStateException("expected " + word + " from the benchmark on stdin, got " + line);
        }
    }
}

package org.acemq.amqp.reliability;

import java.sql.Connection;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;

/**
 * One consumer process of the reliability harness (a separate JVM, started and restarted by
 * {@link ReliabilityHarness}).
 *
 * <pre>
 * java -cp ... org.acemq.amqp.reliability.HarnessConsumer --id c1.0 --broker-port 5672 --jdbc-url jdbc:postgresql://...
 *      (or jdbc:mariadb://... with --user root)
 *      [--user postgres] [--queue orders] [--mode separate|transactional] [--lease-ms 3000] [--concurrency 4]
 *      [--prefetch 50] [--handler-delay-ms 0] [--max-attempts 5] [--crash after-claim:orders|s:order-1,mid-handler:orders|s:order-9,...]
 *      [--broker-host 127.0.0.1] [--address orders] [--amqp-user U --amqp-password P]
 *      [--sample-file PATH --sample-ms 5000]
 * </pre>
 *
 * The key scope is always {@code orders} (so keys are {@code orders|s:<message-id>} whatever the address, e.g.
 * RabbitMQ's {@code /amq/queue/NAME}). With {@code --sample-file} the process appends one line of its own figures
 * every {@code --sample-ms} ({@link ConsumerSampler}: heap after a full GC, live threads, open file descriptors, each
 * Hikari pool, the consumer's Micrometer meters) for the soak ({@link Soak}).
 *
 * The handler's work is one row in {@code harness_effects}. Message kinds (application property {@code kind}):
 * {@code normal}; {@code transient} (throws on attempt 1, succeeds later); {@code poison-permanent} (throws
 * {@link PermanentMessageException} with condition {@value #POISON_CONDITION}); {@code poison-transient} (always
 * throws a transient exception, so it ends rejected as {@code acemq:max-attempts-exceeded}). Prints
 * {@code STARTED <id>} on stdout once consuming; stops gracefully on SIGTERM.
 */
public final class HarnessConsumer {

    static final String POISON_CONDITION = "harness:poison";

    private HarnessConsumer() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String id = opts.getOrDefault("id", "c0.0");
        int brokerPort = Integer.parseInt(required(opts, "broker-port"));
        String jdbcUrl = required(opts, "jdbc-url");
        String user = opts.getOrDefault("user", "postgres");
        String queue = opts.getOrDefault("queue", "orders");
        String mode = opts.getOrDefault("mode", "separate");
        long leaseMs = Long.parseLong(opts.getOrDefault("lease-ms", "3000"));
        int concurrency = Integer.parseInt(opts.getOrDefault("concurrency", "4"));
        int prefetch = Integer.parseInt(opts.getOrDefault("prefetch", "50"));
        long handlerDelayMs = Long.parseLong(opts.getOrDefault("handler-delay-ms", "0"));
        int maxAttempts = Integer.parseInt(opts.getOrDefault("max-attempts", "5"));
        Map<CrashPoint, Set<String>> crashes = parseCrashes(opts.getOrDefault("crash", ""));
        String brokerHost = opts.getOrDefault("broker-host", "127.0.0.1");
        String address = opts.getOrDefault("address", queue);
        String amqpUser = opts.get("amqp-user");
        String amqpPassword = opts.get("amqp-password");
        String sampleFile = opts.get("sample-file");
        long sampleMs = Long.parseLong(opts.getOrDefault("sample-ms", "5000"));

        HikariDataSource storePool = pool(jdbcUrl, user, "store-" + id, concurrency + 2);
        HikariDataSource effectsPool = pool(jdbcUrl, user, "effects-" + id, concurrency + 2);
        JdbcIdempotencyStore jdbcStore = JdbcIdempotencyStore.builder(storePool)
                .tableName(HarnessDb.STORE_TABLE)
                .lease(Duration.ofMillis(leaseMs))
                .retention(Duration.ofHours(24))
                .build();
        CrashPointStore store = new CrashPointStore(jdbcStore, effectsPool, id, crashes);

        // transactional mode: the handler's own pool (one connection per running handler, held to the commit)
        HikariDataSource txPool = mode.equals("transactional") ? pool(jdbcUrl, user, "tx-" + id, concurrency + 1)
                : null;
        MessageHandler handler = switch (mode) {
            case "separate" -> separateHandler(effectsPool, id, crashes, handlerDelayMs);
            case "transactional" -> transactionalHandler(jdbcStore, txPool, effectsPool, id, crashes,
                    handlerDelayMs);
            default -> throw new IllegalArgumentException("--mode must be separate or transactional, was " + mode);
        };

        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver meters = MicrometerObserver.of(registry);
        ConsumerObserver observer = new MeteredObserver(meters) {
            @Override
            public void settled(String subscription, String key, Outcome outcome, SettleReason reason) {
                super.settled(subscription, key, outcome, reason);
                // a duplicate's accept counts too: a chosen key can be taken by an earlier fault (a consumer paused
                // mid-handler confirms it on resuming, and the copy redelivered meanwhile is then settled as a
                // duplicate), and the point is the same: the process dies right after the broker was told accepted
                if (outcome == Outcome.ACCEPTED
                        && (reason == SettleReason.PROCESSED || reason == SettleReason.DUPLICATE)) {
                    CrashPointStore.maybeCrash(crashes, effectsPool, CrashPoint.AFTER_SETTLE, key, id);
                } else if (outcome == Outcome.REJECTED && key != null) {
                    recordRejection(effectsPool, key, reason, id);
                }
            }
        };

        ConnectionSettings.Builder connectionBuilder = ConnectionSettings.builder(brokerHost, brokerPort)
                .reconnect(true)
                .reconnectDelay(Duration.ofMillis(100), Duration.ofSeconds(1));
        if (amqpUser != null) {
            connectionBuilder.credentials(amqpUser, amqpPassword);
        }
        ConnectionSettings connection = connectionBuilder.build();
        Subscription subscription = Subscription.builder(address, handler)
                .name("orders")
                .scope(queue)
                .concurrency(concurrency)
                .prefetch(prefetch)
                .maxAttempts(maxAttempts)
                .inProgressDelay(Duration.ofMillis(200))
                .build();
        AmqpConsumer consumer = AmqpConsumer.builder()
                .name(id)
                .connection(connection)
                .store(store)
                .subscribe(subscription)
                .observer(observer)
                .storeRetryDelay(Duration.ofMillis(100), Duration.ofSeconds(1))
                .shutdownTimeout(Duration.ofSeconds(10))
                .start();
        meters.bindTo(consumer);
        ConsumerSampler sampler = sampleFile == null ? null
                : ConsumerSampler.start(java.nio.file.Path.of(sampleFile), Duration.ofMillis(sampleMs), id, registry,
                        txPool == null ? java.util.List.of(storePool, effectsPool)
                                : java.util.List.of(storePool, effectsPool, txPool));
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                if (sampler != null) {
                    sampler.close();
                }
                consumer.close();
                storePool.close();
                effectsPool.close();
                if (txPool != null) {
                    txPool.close();
                }
            } finally {
                done.countDown();
            }
        }, "harness-consumer-shutdown"));
        System.out.println("STARTED " + id);
        System.out.flush();
        done.await();
    }

    private static MessageHandler separateHandler(DataSource effects, String id, Map<CrashPoint, Set<String>> crashes,
            long handlerDelayMs) {
        return envelope -> {
            failIfScripted(envelope, handlerDelayMs);
            try (Connection c = effects.getConnection()) {
                HarnessDb.insertEffect(c, envelope.id(), id, envelope.attempt());
            }
            CrashPointStore.maybeCrash(crashes, effects, CrashPoint.MID_HANDLER, envelope.id(), id);
            CrashPointStore.maybeCrash(crashes, effects, CrashPoint.PAUSE_MID_HANDLER, envelope.id(), id);
        };
    }

    /**
     * Transactional mode: {@link JdbcTransactionalHandler} with the consumer's own store instance (unwrapped, so its
     * confirm is recorded under the same owner the runtime's claims carry). The effect row is inserted by the work
     * on the handler's connection, so it commits together with the store's confirm or not at all. Fault points:
     * {@code pause-mid-handler} stops the process inside the work, after the effect insert and before the
     * in-transaction confirm (another consumer takes the lapsed claim over and runs the work too; exactly one of the
     * two transactions may commit); {@code crash-mid-handler} halts in {@code commit()}, after the effect insert and
     * the in-transaction confirm, before the commit (neither may survive).
     */
    private static MessageHandler transactionalHandler(JdbcIdempotencyStore store, DataSource appPool,
            DataSource harnessDb, String id, Map<CrashPoint, Set<String>> crashes, long handlerDelayMs) {
        DataSource crashing = CommitCrash.beforeCommit(appPool, harnessDb, crashes, id);
        return JdbcTransactionalHandler.of(store, crashing, (envelope, connection) -> {
            failIfScripted(envelope, handlerDelayMs);
            HarnessDb.insertEffect(connection, envelope.id(), id, envelope.attempt());
            CrashPointStore.maybeCrash(crashes, harnessDb, CrashPoint.PAUSE_MID_HANDLER, envelope.id(), id);
            CommitCrash.WORK_KEY.set(envelope.id());
        });
    }

    /** The scripted behaviour shared by both modes: delay, transient failures, poison. */
    static void failIfScripted(Envelope envelope, long handlerDelayMs) throws Exception {
        if (handlerDelayMs > 0) {
            Thread.sleep(handlerDelayMs);
        }
        Object kind = envelope.applicationProperties().get("kind");
        if ("poison-permanent".equals(kind)) {
            throw new PermanentMessageException(POISON_CONDITION, "poison message " + envelope.id(), null);
        }
        if ("poison-transient".equals(kind)) {
            throw new IllegalStateException("poison message " + envelope.id() + " fails on every attempt");
        }
        if ("transient".equals(kind) && envelope.attempt() == 1) {
            throw new IllegalStateException("scripted transient failure of " + envelope.id() + " on attempt 1");
        }
    }

    private static void recordRejection(DataSource db, String key, SettleReason reason, String id) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            try {
                HarnessDb.recordRejection(db, key, reason.name(), id);
                return;
            } catch (java.sql.SQLException e) {
                if (System.nanoTime() > deadline) {
                    System.err.println("HARNESS could not record rejection of " + key + ": " + e);
                    return;
                }
                CrashPointStore.sleep(200);
            }
        }
    }

    static HikariDataSource pool(String url, String user, String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(1);
        config.setPoolName(name);
        config.setConnectionTimeout(2_000);
        config.setValidationTimeout(1_000);
        config.setInitializationFailTimeout(-1);
        if (url.startsWith("jdbc:mariadb:")) { // MariaDB Connector/J counts in milliseconds
            config.addDataSourceProperty("socketTimeout", "15000");
            config.addDataSourceProperty("connectTimeout", "2000");
        } else { // pgjdbc counts in seconds
            config.addDataSourceProperty("socketTimeout", "15");
            config.addDataSourceProperty("connectTimeout", "2");
        }
        return new HikariDataSource(config);
    }

    static Map<CrashPoint, Set<String>> parseCrashes(String spec) {
        Map<CrashPoint, Set<String>> map = new EnumMap<>(CrashPoint.class);
        for (String item : spec.split(",")) {
            if (item.isBlank()) {
                continue;
            }
            int colon = item.indexOf(':');
            CrashPoint point = CrashPoint.parse(item.substring(0, colon));
            map.computeIfAbsent(point, p -> new HashSet<>()).add(item.substring(colon + 1));
        }
        return map;
    }

    private static String required(Map<String, String> opts, String name) {
        String v = opts.get(name);
        if (v == null) {
            System.err.println("missing --" + name);
            System.exit(2);
        }
        return v;
    }
}

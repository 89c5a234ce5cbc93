package org.acemq.amqp.reliability;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;

import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.samples.twoservices.OrderService;
import org.acemq.amqp.samples.twoservices.ShippingService;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler.TransactionalWork;

/**
 * One consumer process of the chain test ({@link ChainHarness}): service A ({@code --service orders}, the sample's
 * {@link OrderService}) or service B ({@code --service shipping}, the sample's {@link ShippingService}), with the
 * sample's own work, keying and tables, as a deployment would run it: reconnecting, a 3 s lease so that a killed
 * process's claims are taken over quickly, {@link JdbcTransactionalHandler} on the service's own store, and an outbox
 * sweep every second for messages older than 5 s (the defaults, 10 s and 1 min, would make the test wait a minute
 * for each event a kill left between its command's commit and the outbox relay's dispatch).
 *
 * <pre>
 * java -cp ... org.acemq.amqp.reliability.ChainConsumer --service orders|shipping --id a1.0 --broker-port 5672
 *      --jdbc-url jdbc:postgresql://... [--user postgres] [--broker-host 127.0.0.1] [--lease-ms 3000]
 *      [--concurrency 4] [--prefetch 20] [--sweep-interval-ms 1000] [--sweep-min-age-ms 5000]
 *      [--crash after-commit:order-chain-0000012,...]
 * </pre>
 *
 * The only addition to the sample's code is the crash point {@link CrashPoint#AFTER_COMMIT}: the handler's data source
 * is wrapped ({@link CommitCrash#afterCommit}) so that, for the orders the harness armed (by order id, once across all
 * processes), the process sends itself SIGKILL right after the transaction committed, before anything it sent is
 * dispatched. The observer records every copy the service absorbed ({@code reliability.chain_copies}) and every
 * rejection ({@code reliability.harness_rejections}; the chain has no poison, so any is a failure). Prints
 * {@code STARTED <id>} once consuming; stops gracefully on SIGTERM.
 */
public final class ChainConsumer {

    private ChainConsumer() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String service = required(opts, "service");
        String id = required(opts, "id");
        int brokerPort = Integer.parseInt(required(opts, "broker-port"));
        String brokerHost = opts.getOrDefault("broker-host", "127.0.0.1");
        String jdbcUrl = required(opts, "jdbc-url");
        String user = opts.getOrDefault("user", "postgres");
        long leaseMs = Long.parseLong(opts.getOrDefault("lease-ms", "3000"));
        int concurrency = Integer.parseInt(opts.getOrDefault("concurrency", "4"));
        int prefetch = Integer.parseInt(opts.getOrDefault("prefetch", "20"));
        long sweepIntervalMs = Long.parseLong(opts.getOrDefault("sweep-interval-ms", "1000"));
        long sweepMinAgeMs = Long.parseLong(opts.getOrDefault("sweep-min-age-ms", "5000"));
        Map<CrashPoint, Set<String>> crashes = HarnessConsumer.parseCrashes(opts.getOrDefault("crash", ""));

        HikariDataSource storePool = HarnessConsumer.pool(jdbcUrl, user, "store-" + id, concurrency + 2);
        HikariDataSource txPool = HarnessConsumer.pool(jdbcUrl, user, "tx-" + id, concurrency + 1);
        HikariDataSource harnessPool = HarnessConsumer.pool(jdbcUrl, user, "harness-" + id, 2);
        DataSource crashing = CommitCrash.afterCommit(txPool, harnessPool, crashes, id);

        JdbcIdempotencyStore store;
        Subscription.Builder subscription;
        switch (service) {
            case "orders" -> {
                store = OrderService.store(storePool, ChainHarness.ORDER_SCHEMA).lease(Duration.ofMillis(leaseMs))
                        .build();
                TransactionalWork work = OrderService.work(ChainHarness.ORDER_SCHEMA, ChainHarness.EVENTS);
                subscription = OrderService.subscription(ChainHarness.COMMANDS, handler(store, crashing, work));
            }
            case "shipping" -> {
                store = ShippingService.store(storePool, ChainHarness.SHIPPING_SCHEMA)
                        .lease(Duration.ofMillis(leaseMs)).build();
                TransactionalWork work = ShippingService.work(ChainHarness.SHIPPING_SCHEMA);
                subscription = ShippingService.subscription(ChainHarness.EVENTS, handler(store, crashing, work));
            }
            default -> throw new IllegalArgumentException("--service must be orders or shipping, was " + service);
        }

        ConsumerObserver observer = new ConsumerObserver() {
            @Override
            public void settled(String name, String key, Outcome outcome, SettleReason reason) {
                if (key == null) {
                    return;
                }
                if (outcome == Outcome.ACCEPTED && reason == SettleReason.DUPLICATE) {
                    record(harnessPool, "INSERT INTO " + HarnessDb.SCHEMA + ".chain_copies (service, msg_key, consumer)"
                            + " VALUES (?, ?, ?)", service, key, id);
                } else if (outcome == Outcome.REJECTED) {
                    record(harnessPool, "INSERT INTO " + HarnessDb.SCHEMA + ".harness_rejections (msg_key, reason,"
                            + " consumer) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", key, reason.name(), id);
                }
            }
        };
        AmqpConsumer consumer = AmqpConsumer.builder()
                .name(id)
                .connection(ConnectionSettings.builder(brokerHost, brokerPort)
                        .reconnect(true)
                        .reconnectDelay(Duration.ofMillis(100), Duration.ofSeconds(1))
                        .build())
                .store(store)
                .observer(observer)
                .subscribe(subscription.name(service).concurrency(concurrency).prefetch(prefetch)
                        .inProgressDelay(Duration.ofMillis(200)).build())
                .storeRetryDelay(Duration.ofMillis(100), Duration.ofSeconds(1))
                .outboxSweepInterval(Duration.ofMillis(sweepIntervalMs))
                .outboxSweepMinAge(Duration.ofMillis(sweepMinAgeMs))
                .shutdownTimeout(Duration.ofSeconds(10))
                .start();
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                consumer.close();
                storePool.close();
                txPool.close();
                harnessPool.close();
            } finally {
                done.countDown();
            }
        }, "chain-consumer-shutdown"));
        System.out.println("STARTED " + id);
        System.out.flush();
        done.await();
    }

    /**
     * The sample's work behind {@link JdbcTransactionalHandler}, on the crashing data source; the work names its order
     * last, so that the commit that follows knows which order it commits.
     */
    private static MessageHandler handler(JdbcIdempotencyStore store, DataSource crashing, TransactionalWork work) {
        return JdbcTransactionalHandler.of(store, crashing, (envelope, connection) -> {
            work.handle(envelope, connection);
            CommitCrash.WORK_KEY.set(String.valueOf(envelope.applicationProperties().get(OrderService.ORDER_ID)));
        });
    }

    /** Inserts one harness record, retrying for a while through a database outage; never fails the settle. */
    private static void record(DataSource db, String sql, String a, String b, String c) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            try (Connection conn = db.getConnection(); PreparedStatement ps = conn.prepareStatement(sql)) {
                ps.setString(1, a);
                ps.setString(2, b);
                ps.setString(3, c);
                ps.executeUpdate();
                return;
            } catch (SQLException e) {
                if (System.nanoTime() > deadline) {
                    System.err.println("HARNESS could not record " + sql + " for " + b + ": " + e);
                    return;
                }
                CrashPointStore.sleep(200);
            }
        }
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

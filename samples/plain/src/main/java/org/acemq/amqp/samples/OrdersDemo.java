package org.acemq.amqp.samples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintStream;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.DistributionMode;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * The AceMQ consumer demo: publishes an order workload with injected duplicates, transient handler failures and
 * poison messages, consumes it with {@link AmqpConsumer}, and proves from the handler's recorded effects that every
 * order was processed exactly once and every poison message was dead-lettered.
 *
 * <p>With no arguments it starts an embedded ActiveMQ Artemis broker in this process (the published
 * {@code acemq-test-support}'s {@link EmbeddedArtemis}) and uses the in-memory idempotency store. It publishes and
 * browses with the protonj2 client directly, as an application's own publisher would. With
 * {@code --prometheus-port} it also binds {@link MicrometerObserver} to a Prometheus registry served over HTTP. See
 * {@link DemoOptions#USAGE} and {@code docs/sample.md}.
 *
 * <p>Exit status: 0 PASS, 1 FAIL (or an error), 2 bad arguments.
 */
public final class OrdersDemo {

    /** Exit status when every order was processed exactly once and the poison was dead-lettered. */
    public static final int EXIT_PASS = 0;
    /** Exit status when an order was lost or processed twice, poison was not dead-lettered, or the run failed. */
    public static final int EXIT_FAIL = 1;
    /** Exit status for a bad command line. */
    public static final int EXIT_USAGE = 2;

    private static final int PUBLISH_WINDOW = 1_000;
    private static final int BROWSE_BATCH = 1_000;
    private static final long POLL_MILLIS = 20;
    private static final Duration DLQ_WAIT = Duration.ofSeconds(10);
    private static final String RULE = " " + "-".repeat(78);

    private OrdersDemo() {
    }

    /**
     * Runs the demo and exits with its status.
     *
     * @param args see {@link DemoOptions#USAGE}
     */
    public static void main(String[] args) {
        int status = run(args, System.out, System.err, System.console() != null);
        System.exit(status);
    }

    /**
     * Runs the demo without exiting the JVM.
     *
     * @param args the command line
     * @param out where the summary goes
     * @param err where the progress line, errors and usage go
     * @param tty whether {@code err} is a terminal (progress rewritten in place) or not (plain lines)
     * @return the exit status
     */
    public static int run(String[] args, PrintStream out, PrintStream err, boolean tty) {
        DemoOptions options;
        try {
            options = DemoOptions.parse(args);
        } catch (DemoOptions.UsageException e) {
            err.println("error: " + e.getMessage());
            err.println();
            err.println(DemoOptions.USAGE);
            return EXIT_USAGE;
        }
        if (options.help()) {
            out.println(DemoOptions.USAGE);
            return EXIT_PASS;
        }
        try {
            DemoResult result = execute(options, out, err, tty);
            return result.pass() ? EXIT_PASS : EXIT_FAIL;
        } catch (RuntimeException e) {
            err.println();
            err.println(" VERDICT: FAIL - the demo could not run: " + describe(e));
            return EXIT_FAIL;
        }
    }

    /**
     * Runs the whole demo: broker, store, publish, consume, check, summary.
     *
     * @param options the options
     * @param out where the summary goes
     * @param err where the progress line goes
     * @param tty whether {@code err} is a terminal
     * @return what happened
     */
    public static DemoResult execute(DemoOptions options, PrintStream out, PrintStream err, boolean tty) {
        String runId = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x100000, 0x1000000));
        Workload workload = Workload.create(runId, options.messages(), options.duplicates(),
                options.transientFailures(), options.poison(), options.seed());
        Progress progress = new Progress(err, tty);
        long deadline = System.nanoTime() + options.timeout().toNanos();

        EmbeddedArtemis broker = null;
        HikariDataSource pool = null;
        Client client = null;
        AmqpConsumer consumer = null;
        MetricsEndpoint metrics = null;
        try {
            MicrometerObserver micrometer = null;
            if (options.prometheus()) {
                metrics = MetricsEndpoint.start(options.prometheusPort());
                micrometer = MicrometerObserver.of(metrics.registry());
                progress.show(" serving metrics for Prometheus at " + metrics.url(), true);
            }
            String host;
            int port;
            String queue;
            String dlq;
            String brokerDescription;
            if (options.externalBroker()) {
                host = options.brokerHost();
                port = options.brokerPort();
                queue = options.queue() != null ? options.queue() : "acemq-demo-" + runId;
                dlq = options.dlq() != null ? options.dlq() : "DLQ";
                brokerDescription = "broker " + host + ":" + port;
            } else {
                progress.show(" starting embedded ActiveMQ Artemis ...", true);
                // our maxAttempts decides when a message is poison, not the broker's max-delivery-attempts
                broker = EmbeddedArtemis.builder().persistent(false).maxDeliveryAttempts(-1)
                        .redeliveryDelay(Duration.ZERO).build().start();
                host = broker.host();
                port = broker.port();
                queue = options.queue() != null ? options.queue() : "orders";
                dlq = options.dlq() != null ? options.dlq() : EmbeddedArtemis.deadLetterQueueName(queue);
                brokerDescription = "embedded Artemis on " + host + ":" + port;
            }

            IdempotencyStore store;
            String storeDescription;
            if (options.jdbc()) {
                progress.show(" connecting to PostgreSQL ...", true);
                pool = newPool(options);
                JdbcIdempotencyStore jdbcStore = JdbcIdempotencyStore.builder(pool).build();
                jdbcStore.createSchema();
                store = jdbcStore;
                storeDescription = "PostgreSQL (table " + jdbcStore.tableName() + ")";
            } else {
                store = InMemoryIdempotencyStore.ofDefaults();
                storeDescription = "in-memory";
            }

            client = Client.create();
            Connection amqp = connect(client, host, port, options);
            int published = publish(amqp, queue, workload, progress);
            progress.finish();

            // ---- consume
            DemoObserver observer = micrometer == null ? new DemoObserver() : new DemoObserver(micrometer);
            Effects effects = new Effects(workload, options.work());
            ConnectionSettings.Builder connection = ConnectionSettings.builder(host, port);
            if (options.user() != null) {
                connection.credentials(options.user(), options.password());
            }
            long consumeStart = System.nanoTime();
            consumer = AmqpConsumer.builder()
                    .name("orders-demo")
                    .connection(connection.build())
                    .store(store)
                    .observer(observer)
                    .subscribe(Subscription.builder(queue, effects)
                            .concurrency(options.concurrency())
                            .maxAttempts(options.maxAttempts())
                            .build())
                    .start();
            if (micrometer != null) {
                micrometer.bindTo(consumer); // the gauges: connected, paused, in-flight, oldest claim age, ...
            }

            boolean completed = false;
            while (true) {
                progress.show(consumeLine(workload, effects, observer, consumeStart), false);
                if (effects.done() == workload.healthyOrders()
                        && observer.finallySettled() >= published
                        && observer.settled(SettleReason.POISON) + observer.settled(SettleReason.PERMANENT)
                                >= workload.poisonCount()) {
                    completed = true;
                    break;
                }
                if (System.nanoTime() - deadline >= 0) {
                    break;
                }
                sleep(POLL_MILLIS);
            }
            progress.show(consumeLine(workload, effects, observer, consumeStart), true);
            progress.finish();
            String timeoutMessage = completed ? null : timeoutMessage(options, workload, published, effects, observer);

            consumer.close();
            AmqpConsumer closed = consumer; // its gauges report the final state while --prometheus-hold serves them
            consumer = null;

            // ---- dead-letter queue: wait (bounded) until every poison order is there
            BitSet inDlq = new BitSet(workload.orders());
            long dlqDeadline = System.nanoTime() + DLQ_WAIT.toNanos();
            int ours;
            do {
                inDlq.clear();
                ours = browse(amqp, dlq, workload, inDlq);
                if (!completed || poisonMissing(workload, inDlq) == 0) {
                    break;
                }
                sleep(100);
            } while (System.nanoTime() - dlqDeadline < 0);

            long end = observer.lastFinalNanos() != 0 ? observer.lastFinalNanos() : System.nanoTime();
            DemoResult result = DemoResult.compute(options, workload, published, effects, observer, inDlq, ours,
                    Math.max(1, end - consumeStart), timeoutMessage);
            printSummary(out, options, workload, brokerDescription, queue, dlq, storeDescription, result);
            if (metrics != null && !options.prometheusHold().isZero()) {
                err.println(" serving the final metrics at " + metrics.url() + " for "
                        + options.prometheusHold().toSeconds() + " s");
                sleep(options.prometheusHold().toMillis());
            }
            Reference.reachabilityFence(closed); // MicrometerObserver's gauges hold the consumer weakly
            return result;
        } finally {
            if (consumer != null) {
                consumer.close(Duration.ofSeconds(5));
            }
            if (client != null) {
                client.close();
            }
            if (pool != null) {
                pool.close();
            }
            if (broker != null) {
                broker.close();
            }
            if (metrics != null) {
                metrics.close();
            }
        }
    }

    /** One connection for publishing and browsing, opened synchronously; no reconnect (the demo then fails). */
    private static Connection connect(Client client, String host, int port, DemoOptions options) {
        ConnectionOptions connectionOptions = new ConnectionOptions();
        if (options.user() != null) {
            connectionOptions.user(options.user()).password(options.password());
        }
        try {
            Connection connection = client.connect(host, port, connectionOptions);
            connection.openFuture().get(30, TimeUnit.SECONDS);
            return connection;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting to " + host + ":" + port, e);
        } catch (Exception e) {
            throw new IllegalStateException("cannot connect to " + host + ":" + port + ": " + describe(e), e);
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // the application side: a handler that applies orders and records every effect

    /**
     * The demo's message handler. "Applying" an order increments its effect counter; a real handler would write to a
     * database or call a service. Faults are simulated from the message's {@value Workload#FAULT_PROPERTY}
     * property: {@code transient} throws on the first attempt only, {@code poison} throws on every attempt.
     */
    static final class Effects implements MessageHandler {
        private final Workload workload;
        private final long workMillis;
        private final ConcurrentHashMap<String, AtomicInteger> effects = new ConcurrentHashMap<>();
        private final AtomicInteger done = new AtomicInteger();
        private final LongAdder foreign = new LongAdder();

        Effects(Workload workload, Duration work) {
            this.workload = workload;
            this.workMillis = work.toMillis();
        }

        @Override
        public void handle(Envelope envelope) throws InterruptedException {
            int order = workload.orderOf(envelope.messageId());
            if (order < 0) {
                foreign.increment(); // not from this run (left over in a shared queue): accept and ignore
                return;
            }
            Object fault = envelope.applicationProperties().get(Workload.FAULT_PROPERTY);
            if (Workload.FAULT_POISON.equals(fault)) {
                throw new IllegalStateException("order " + envelope.messageId() + " cannot be applied (poison)");
            }
            if (Workload.FAULT_TRANSIENT.equals(fault) && envelope.attempt() == 1) {
                throw new IllegalStateException("order service briefly unavailable (simulated, attempt 1)");
            }
            if (workMillis > 0) {
                Thread.sleep(workMillis); // --work: stands for the order service's time, not a wait for anything
            }
            String orderId = (String) envelope.messageId();
            int count = effects.computeIfAbsent(orderId, k -> new AtomicInteger()).incrementAndGet();
            if (count == 1) {
                done.incrementAndGet();
            }
        }

        /** @return how many orders have been applied at least once */
        int done() {
            return done.get();
        }

        /** @return how often the order was applied */
        int count(int order) {
            AtomicInteger n = effects.get(workload.messageId(order));
            return n == null ? 0 : n.get();
        }

        long foreign() {
            return foreign.sum();
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // broker-side helpers

    /**
     * Publishes the plan on one sender link, pipelined: up to {@value #PUBLISH_WINDOW} messages are in flight, and
     * each is counted only once the broker accepted it.
     */
    private static int publish(Connection connection, String queue, Workload workload, Progress progress) {
        int total = workload.published();
        int confirmed = 0;
        long start = System.nanoTime();
        ArrayDeque<Tracker> window = new ArrayDeque<>(PUBLISH_WINDOW);
        try (Sender sender = connection.openSender(queue)) {
            sender.openFuture().get(30, TimeUnit.SECONDS);
            for (int i = 0; i < total; i++) {
                int order = workload.orderAt(i);
                Message<String> message = Message.create(workload.body(order))
                        .messageId(workload.messageId(order))
                        .durable(true);
                String fault = workload.faultOf(order);
                if (fault != null) {
                    message.property(Workload.FAULT_PROPERTY, fault);
                }
                window.add(sender.send(message));
                if (window.size() >= PUBLISH_WINDOW) {
                    awaitAccepted(window.poll(), queue);
                    confirmed++;
                    if (confirmed % 500 == 0) {
                        progress.show(String.format(Locale.ROOT, " publishing %s/%s to %s", num(confirmed),
                                num(total), queue), false);
                    }
                }
            }
            while (!window.isEmpty()) {
                awaitAccepted(window.poll(), queue);
                confirmed++;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while publishing", e);
        } catch (IllegalStateException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("cannot publish to " + queue + " after " + confirmed + " messages: "
                    + describe(e), e);
        }
        double seconds = Math.max(1e-3, (System.nanoTime() - start) / 1e9);
        progress.show(String.format(Locale.ROOT, " published %s messages to %s in %.1f s (%s msg/s)", num(confirmed),
                queue, seconds, num(Math.round(confirmed / seconds))), true);
        return confirmed;
    }

    private static void awaitAccepted(Tracker tracker, String queue) throws ClientException {
        tracker.awaitSettlement(30, TimeUnit.SECONDS);
        if (tracker.remoteState() == null || !tracker.remoteState().isAccepted()) {
            throw new IllegalStateException("the broker did not accept a message sent to " + queue + ": "
                    + tracker.remoteState());
        }
    }

    /**
     * Browses (reads without consuming) the dead-letter queue and marks this run's orders found there.
     *
     * @return how many of this run's messages are in the queue
     */
    private static int browse(Connection connection, String dlq, Workload workload, BitSet found) {
        ReceiverOptions options = new ReceiverOptions().creditWindow(0).autoAccept(false);
        options.sourceOptions().distributionMode(DistributionMode.COPY);
        int ours = 0;
        try (Receiver receiver = connection.openReceiver(dlq, options)) {
            receiver.openFuture().get(30, TimeUnit.SECONDS);
            while (true) {
                receiver.addCredit(BROWSE_BATCH);
                receiver.drain().get(30, TimeUnit.SECONDS);
                int n = 0;
                Delivery d;
                while ((d = receiver.tryReceive()) != null) {
                    n++;
                    int order = workload.orderOf(d.message().messageId());
                    if (order >= 0) {
                        ours++;
                        found.set(order);
                    }
                    if (!d.settled()) {
                        d.settle();
                    }
                }
                if (n < BROWSE_BATCH) {
                    return ours;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading " + dlq, e);
        } catch (Exception e) {
            throw new IllegalStateException("cannot read the dead-letter queue " + dlq + ": " + describe(e), e);
        }
    }

    private static HikariDataSource newPool(DemoOptions options) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(options.jdbcUrl());
        if (options.jdbcUser() != null) {
            config.setUsername(options.jdbcUser());
        }
        if (options.jdbcPassword() != null) {
            config.setPassword(options.jdbcPassword());
        }
        config.setPoolName("acemq-demo");
        // one connection per handler thread, plus heartbeats/confirms racing with them
        config.setMaximumPoolSize(options.concurrency() + 2);
        config.setConnectionTimeout(10_000);
        return new HikariDataSource(config);
    }

    // ------------------------------------------------------------------------------------------------------------
    // reporting

    private static String consumeLine(Workload w, Effects effects, DemoObserver o, long start) {
        double seconds = Math.max(1e-3, (System.nanoTime() - start) / 1e9);
        return String.format(Locale.ROOT,
                " %s/%s settled: %s applied, %s dup, %s retried, %s DLQ, %s msg/s",
                num(o.finallySettled()), num(w.published()), num(effects.done()), num(o.settled(SettleReason.DUPLICATE)),
                num(o.settled(SettleReason.FAILED)), num(o.settled(SettleReason.POISON)),
                num(Math.round(o.finallySettled() / seconds)));
    }

    private static String timeoutMessage(DemoOptions options, Workload w, int published, Effects effects,
                                         DemoObserver o) {
        return String.format(Locale.ROOT, "timed out after %d s: %s of %s orders applied, %s of %s deliveries "
                        + "settled, %s of %s poison orders rejected",
                options.timeout().toSeconds(), num(effects.done()), num(w.healthyOrders()), num(o.finallySettled()),
                num(published), num(o.settled(SettleReason.POISON) + o.settled(SettleReason.PERMANENT)),
                num(w.poisonCount()));
    }

    static int poisonMissing(Workload w, BitSet inDlq) {
        int missing = 0;
        for (int i = 0; i < w.orders(); i++) {
            if (w.isPoison(i) && !inDlq.get(i)) {
                missing++;
            }
        }
        return missing;
    }

    private static void printSummary(PrintStream out, DemoOptions options, Workload w, String broker, String queue,
                                     String dlq, String store, DemoResult r) {
        out.println();
        out.printf(Locale.ROOT, " AceMQ consumer demo: %s orders (+%s duplicates, %s transient failures, %s poison)"
                        + " at concurrency %d%n", num(w.orders()), num(w.duplicates()), num(w.transientFailures()),
                num(w.poisonCount()), options.concurrency());
        out.printf(Locale.ROOT, " %s, queue %s, DLQ %s; store: %s; max attempts %d%n", broker, queue, dlq, store,
                options.maxAttempts());
        out.println(RULE);
        out.printf(Locale.ROOT, " %-34s %12s %12s%n", "", "actual", "expected");
        row(out, "published (incl. duplicates)", r.published(), w.published(), null);
        row(out, "processed exactly once", r.exactlyOnce(), w.healthyOrders(), null);
        row(out, "duplicates absorbed", r.duplicatesAbsorbed(), w.duplicates(), null);
        row(out, "retried after a handler failure", r.retried(), r.expectedRetried(),
                String.format(Locale.ROOT, "%s transient + %s poison x %d", num(w.transientFailures()),
                        num(w.poisonCount()), Math.max(0, options.maxAttempts() - 1)));
        row(out, "dead-lettered (poison)", r.deadLettered(), w.poisonCount(), null);
        row(out, "lost", r.lost(), 0, null);
        row(out, "processed twice", r.processedTwice(), 0, null);
        out.printf(Locale.ROOT, " %-34s %12s %12s   %s deliveries in %.2f s%n", "throughput",
                num(r.throughput()) + " msg/s", "", num(r.settled()), r.consumeNanos() / 1e9);
        out.println(RULE);
        for (String note : r.notes()) {
            out.println(" note: " + note);
        }
        out.println(" VERDICT: " + r.verdict());
        out.flush();
    }

    private static void row(PrintStream out, String label, long actual, long expected, String note) {
        out.printf(Locale.ROOT, " %-34s %12s %12s%s%n", label, num(actual), num(expected),
                (note == null ? "" : "   " + note) + (actual == expected ? "" : "   <-- differs"));
    }

    static String num(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    private static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(String.valueOf(e.getMessage() != null ? e.getMessage() : e.toString()));
        Throwable cause = e.getCause();
        int depth = 0;
        while (cause != null && cause != e && depth++ < 3) {
            if (cause.getMessage() != null && !sb.toString().contains(cause.getMessage())) {
                sb.append(" (").append(cause.getMessage()).append(')');
            }
            cause = cause.getCause();
        }
        return sb.toString();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}

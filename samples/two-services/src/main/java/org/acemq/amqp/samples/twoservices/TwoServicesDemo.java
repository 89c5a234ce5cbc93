package org.acemq.amqp.samples.twoservices;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintStream;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresServer;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;

/**
 * The two-services demo: an {@link OrderService} and a {@link ShippingService}, each an {@link AmqpConsumer} with a
 * JDBC store of its own, chained by the order service's {@code OrderAccepted} events. It publishes a
 * {@link CommandPlan} (orders, duplicates, retries under new message-ids), waits until every order reached the
 * shipping service, and gives its verdict from both services' tables ({@link Ledger}).
 *
 * <p>With no arguments it starts an embedded ActiveMQ Artemis broker in this process and finds PostgreSQL as the
 * project's tests do ({@link PostgresProvider}: {@code ACEMQ_TEST_JDBC_URL}, else real PostgreSQL binaries it
 * unpacks and starts). The two services run in this one JVM for the demo; each has its own connection, pools, store
 * and schema, as two deployments would. The reliability module's chain test runs the same two services in separate
 * JVMs and kills them. See {@link TwoServicesOptions#USAGE} and {@code docs/sample.md}.
 *
 * <p>Exit status: 0 PASS, 1 FAIL (or an error), 2 bad arguments.
 */
public final class TwoServicesDemo {

    /** Exit status when every order has exactly one row in each service. */
    public static final int EXIT_PASS = 0;
    /** Exit status when an order was lost or has two rows in a service, or the run failed. */
    public static final int EXIT_FAIL = 1;
    /** Exit status for a bad command line. */
    public static final int EXIT_USAGE = 2;

    private static final int PUBLISH_WINDOW = 500;
    private static final long POLL_MILLIS = 250;
    private static final String RULE = " " + "-".repeat(78);

    private TwoServicesDemo() {
    }

    /**
     * Runs the demo and exits with its status.
     *
     * @param args see {@link TwoServicesOptions#USAGE}
     */
    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Runs the demo without exiting the JVM.
     *
     * @param args the command line
     * @param out where the summary goes
     * @param err where progress, errors and usage go
     * @return the exit status
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        TwoServicesOptions options;
        try {
            options = TwoServicesOptions.parse(args);
        } catch (TwoServicesOptions.UsageException e) {
            err.println("error: " + e.getMessage());
            err.println();
            err.println(TwoServicesOptions.USAGE);
            return EXIT_USAGE;
        }
        if (options.help()) {
            out.println(TwoServicesOptions.USAGE);
            return EXIT_PASS;
        }
        try {
            return execute(options, out, err).pass() ? EXIT_PASS : EXIT_FAIL;
        } catch (RuntimeException | SQLException e) {
            err.println();
            err.println(" VERDICT: FAIL - the demo could not run: " + describe(e));
            return EXIT_FAIL;
        }
    }

    /**
     * What a run found.
     *
     * @param plan what was published
     * @param published commands the broker accepted (originals and copies)
     * @param ledger what both services' tables say
     * @param copiesAbsorbed commands the order service accepted as copies without running its handler
     * @param handledByShipping events the shipping service's handler ran for and committed
     * @param eventCopiesAbsorbed events the shipping service accepted as copies
     * @param completed whether every order reached the shipping service before the timeout
     * @param seconds from starting the consumers to the last shipment
     */
    public record Result(CommandPlan plan, int published, Ledger ledger, long copiesAbsorbed, long handledByShipping,
                         long eventCopiesAbsorbed, boolean completed, double seconds) {

        /** @return whether the run passed: completed, and exactly one row per order in each service */
        public boolean pass() {
            return completed && ledger.exactlyOnce() && ledger.eventsPending() == 0;
        }
    }

    /**
     * Runs the whole demo: broker, database, both services, publish, wait, check, summary.
     *
     * @param options the options
     * @param out where the summary goes
     * @param err where progress goes
     * @return what happened
     * @throws SQLException if the database cannot be set up or read
     */
    public static Result execute(TwoServicesOptions options, PrintStream out, PrintStream err) throws SQLException {
        String runId = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x100000, 0x1000000));
        CommandPlan plan = CommandPlan.create(runId, options.orders(), options.duplicates(), options.newIdRetries(),
                options.seed());
        String orderSchema = OrderService.DEFAULT_SCHEMA;
        String shippingSchema = ShippingService.DEFAULT_SCHEMA;
        List<AutoCloseable> open = new ArrayList<>();
        try {
            // ---- the broker
            String host;
            int port;
            String commands;
            String events;
            String brokerDescription;
            if (options.externalBroker()) {
                host = options.brokerHost();
                port = options.brokerPort();
                commands = "place-order-" + runId;
                events = "order-accepted-" + runId;
                brokerDescription = "broker " + host + ":" + port;
            } else {
                err.println(" starting embedded ActiveMQ Artemis ...");
                EmbeddedArtemis broker = EmbeddedArtemis.builder().persistent(false).redeliveryDelay(Duration.ZERO)
                        .build().start();
                open.add(broker);
                host = broker.host();
                port = broker.port();
                commands = "place-order";
                events = "order-accepted";
                brokerDescription = "embedded Artemis on " + host + ":" + port;
            }

            // ---- the database: both services' schemas in one PostgreSQL, as if each had its own database
            String url;
            String user;
            String password;
            String databaseDescription;
            if (options.jdbcUrl() != null) {
                url = options.jdbcUrl();
                user = options.jdbcUser();
                password = options.jdbcPassword();
                databaseDescription = "PostgreSQL at " + url;
            } else {
                err.println(" finding PostgreSQL (" + PostgresProvider.URL_ENV + ", else embedded binaries) ...");
                PostgresServer server = PostgresProvider.shared();
                url = server.jdbcUrl();
                user = server.user();
                password = server.password();
                databaseDescription = "PostgreSQL (" + server.source().name().toLowerCase(Locale.ROOT) + ")";
            }
            int c = options.concurrency();
            HikariDataSource orderStorePool = pool(open, url, user, password, "order-store", c + 2);
            HikariDataSource orderTxPool = pool(open, url, user, password, "order-tx", c + 1);
            HikariDataSource shippingStorePool = pool(open, url, user, password, "shipping-store", c + 2);
            HikariDataSource shippingTxPool = pool(open, url, user, password, "shipping-tx", c + 1);
            JdbcIdempotencyStore orderStore = OrderService.store(orderStorePool, orderSchema).build();
            OrderService.createSchema(orderTxPool, orderStore, orderSchema);
            JdbcIdempotencyStore shippingStore = ShippingService.store(shippingStorePool, shippingSchema).build();
            ShippingService.createSchema(shippingTxPool, shippingStore, shippingSchema);

            // ---- the two services: each its own consumer, connection and store
            ConnectionSettings.Builder connection = ConnectionSettings.builder(host, port);
            if (options.user() != null) {
                connection.credentials(options.user(), options.password());
            }
            SettleCounter shippingSettles = new SettleCounter();
            AmqpConsumer shipping = AmqpConsumer.builder()
                    .name("shipping-service")
                    .connection(connection.build())
                    .store(shippingStore)
                    .observer(shippingSettles)
                    .subscribe(ShippingService.subscription(events,
                                    ShippingService.handler(shippingStore, shippingTxPool, shippingSchema))
                            .concurrency(c).build())
                    .start();
            open.add(shipping);
            SettleCounter orderSettles = new SettleCounter();
            AmqpConsumer orders = AmqpConsumer.builder()
                    .name("order-service")
                    .connection(connection.build())
                    .store(orderStore)
                    .observer(orderSettles)
                    .subscribe(OrderService.subscription(commands,
                                    OrderService.handler(orderStore, orderTxPool, orderSchema, events))
                            .concurrency(c).build())
                    .start();
            open.add(orders);
            long start = System.nanoTime();

            // ---- publish, as an application's own publisher would (the protonj2 client, each send confirmed)
            Client client = Client.create();
            open.add(client);
            int published = publish(client, host, port, options, commands, plan, err);

            // ---- wait until every order is shipped and every command and event settled
            long deadline = start + options.timeout().toNanos();
            Ledger ledger;
            boolean completed;
            long lastShown = 0;
            while (true) {
                ledger = Ledger.read(orderTxPool, plan, orderSchema, orderStore.outboxTableName(), shippingSchema);
                completed = ledger.rowsInShipments() >= plan.orders() && ledger.eventsPending() == 0
                        && orderSettles.accepted() >= published
                        && shippingSettles.accepted() >= ledger.eventsSent();
                if (completed || System.nanoTime() - deadline >= 0) {
                    break;
                }
                if (System.nanoTime() - lastShown > 1_000_000_000L) {
                    lastShown = System.nanoTime();
                    err.printf(Locale.ROOT, " %s/%s orders placed, %s shipped, %s events pending%n",
                            num(ledger.rowsInOrders()), num(plan.orders()), num(ledger.rowsInShipments()),
                            num(ledger.eventsPending()));
                }
                sleep(POLL_MILLIS);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            orders.close();
            shipping.close();
            // read again once both services stopped: a late second run would show now
            ledger = Ledger.read(orderTxPool, plan, orderSchema, orderStore.outboxTableName(), shippingSchema);
            Result result = new Result(plan, published, ledger, orderSettles.count(SettleReason.DUPLICATE),
                    shippingSettles.count(SettleReason.PROCESSED), shippingSettles.count(SettleReason.DUPLICATE),
                    completed, seconds);
            printSummary(out, options, brokerDescription, commands, events, databaseDescription, result);
            return result;
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                try {
                    open.get(i).close();
                } catch (Exception e) {
                    err.println(" (closing " + open.get(i) + ": " + describe(e) + ")");
                }
            }
        }
    }

    /** Publishes the plan on one sender link, pipelined; each command counts once the broker accepted it. */
    private static int publish(Client client, String host, int port, TwoServicesOptions options, String address,
            CommandPlan plan, PrintStream err) {
        ConnectionOptions connectionOptions = new ConnectionOptions();
        if (options.user() != null) {
            connectionOptions.user(options.user()).password(options.password());
        }
        int confirmed = 0;
        long start = System.nanoTime();
        try (Connection connection = client.connect(host, port, connectionOptions);
             Sender sender = connection.openSender(address)) {
            sender.openFuture().get(30, TimeUnit.SECONDS);
            ArrayDeque<Tracker> window = new ArrayDeque<>(PUBLISH_WINDOW);
            for (CommandPlan.Command command : plan.commands()) {
                Message<String> message = Message.create(command.body()).messageId(command.messageId())
                        .subject("PlaceOrder").contentType("application/json").durable(true);
                for (var property : command.properties().entrySet()) {
                    message.property(property.getKey(), property.getValue());
                }
                window.add(sender.send(message));
                if (window.size() >= PUBLISH_WINDOW) {
                    awaitAccepted(window.poll(), address);
                    confirmed++;
                }
            }
            while (!window.isEmpty()) {
                awaitAccepted(window.poll(), address);
                confirmed++;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while publishing", e);
        } catch (IllegalStateException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("cannot publish to " + address + " on " + host + ":" + port + " after "
                    + confirmed + " commands: " + describe(e), e);
        }
        err.printf(Locale.ROOT, " published %s commands to %s in %.1f s%n", num(confirmed), address,
                (System.nanoTime() - start) / 1e9);
        return confirmed;
    }

    private static void awaitAccepted(Tracker tracker, String address) throws Exception {
        tracker.awaitSettlement(30, TimeUnit.SECONDS);
        if (tracker.remoteState() == null || !tracker.remoteState().isAccepted()) {
            throw new IllegalStateException("the broker did not accept a command sent to " + address + ": "
                    + tracker.remoteState());
        }
    }

    private static HikariDataSource pool(List<AutoCloseable> open, String url, String user, String password,
            String name, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        if (user != null) {
            config.setUsername(user);
        }
        if (password != null) {
            config.setPassword(password);
        }
        config.setPoolName(name);
        config.setMaximumPoolSize(size);
        config.setConnectionTimeout(10_000);
        HikariDataSource pool = new HikariDataSource(config);
        open.add(pool);
        return pool;
    }

    // ------------------------------------------------------------------------------------------------------------
    // reporting

    private static void printSummary(PrintStream out, TwoServicesOptions options, String broker, String commands,
            String events, String database, Result r) {
        CommandPlan plan = r.plan();
        Ledger l = r.ledger();
        int copies = plan.duplicates() + plan.newIdRetries();
        out.println();
        out.printf(Locale.ROOT, " AceMQ two-services demo: %s orders (+%s duplicates, +%s retries under new ids),"
                + " concurrency %d per service%n", num(plan.orders()), num(plan.duplicates()),
                num(plan.newIdRetries()), options.concurrency());
        out.printf(Locale.ROOT, " %s, queues %s -> %s; %s, schemas %s and %s%n", broker, commands, events, database,
                OrderService.DEFAULT_SCHEMA, ShippingService.DEFAULT_SCHEMA);
        out.println(RULE);
        out.printf(Locale.ROOT, " %-40s %10s %10s%n", "", "actual", "expected");
        row(out, "commands published (incl. copies)", r.published(), plan.commands().size(), null);
        row(out, "copies absorbed by the order service", r.copiesAbsorbed(), copies,
                "keyed by orderId: a new message-id is no new order");
        row(out, "order rows (service A)", l.rowsInOrders(), plan.orders(), null);
        row(out, "OrderAccepted written to the outbox", l.eventsSent(), plan.orders(), null);
        row(out, "  of them not dispatched", l.eventsPending(), 0, null);
        row(out, "OrderAccepted handled by shipping", r.handledByShipping(), plan.orders(), null);
        row(out, "shipment rows (service B)", l.rowsInShipments(), plan.orders(), null);
        row(out, "lost (no row in A or B)", l.lost(), 0, null);
        row(out, "twice (two rows in A or B)", l.twiceInOrders() + l.twiceInShipments(), 0, null);
        row(out, "shipment of another event", l.wrongEvent(), 0, null);
        out.printf(Locale.ROOT, " %-40s %10s %10s   %s events copied and absorbed by shipping%n", "time",
                String.format(Locale.ROOT, "%.1f s", r.seconds()), "", num(r.eventCopiesAbsorbed()));
        out.println(RULE);
        for (String example : l.examples()) {
            out.println(" " + example);
        }
        if (!r.completed()) {
            out.println(" note: timed out after " + options.timeout().toSeconds() + " s before every order was"
                    + " shipped and every command and event settled");
        }
        out.println(" VERDICT: " + (r.pass()
                ? "PASS - every order has exactly one row in each service, and the event between them went once"
                : "FAIL - " + (l.exactlyOnce() && l.eventsPending() == 0 ? "timed out" : "see the rows marked"
                        + " <-- differs")));
        out.flush();
    }

    private static void row(PrintStream out, String label, long actual, long expected, String note) {
        out.printf(Locale.ROOT, " %-40s %10s %10s%s%n", label, num(actual), num(expected),
                (actual == expected ? "" : "   <-- differs") + (note == null ? "" : "   " + note));
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

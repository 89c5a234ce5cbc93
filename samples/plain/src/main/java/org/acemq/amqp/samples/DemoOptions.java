package org.acemq.amqp.samples;

import java.time.Duration;
import java.util.Locale;

/**
 * The command line of {@link OrdersDemo}, parsed and validated. Immutable.
 *
 * @param help whether {@code --help} was given (everything else is then ignored)
 * @param messages distinct orders to publish
 * @param duplicates share of orders re-published with the same message-id
 * @param transientFailures share of orders whose handler throws on the first attempt
 * @param poison orders whose handler always throws (they must end in the dead-letter queue)
 * @param concurrency handler threads
 * @param maxAttempts the subscription's maximum attempts per message
 * @param brokerHost external broker host, or null for the embedded broker
 * @param brokerPort external broker port
 * @param user broker user, or null
 * @param password broker password, or null
 * @param queue queue to use, or null for the default ("orders" embedded, "acemq-demo-&lt;run&gt;" external)
 * @param dlq dead-letter queue to check, or null for the default ("DLQ.&lt;queue&gt;" embedded, "DLQ" external)
 * @param jdbcUrl PostgreSQL JDBC URL, or null for the in-memory store
 * @param jdbcUser database user, or null
 * @param jdbcPassword database password, or null
 * @param timeout how long to wait for the workload to complete
 * @param seed seed for choosing duplicates, failures and poison
 * @param prometheusPort port of the Prometheus endpoint on 127.0.0.1 (0 = any free port), or -1 for none
 * @param prometheusHold how long to keep serving metrics after the summary
 * @param work how long the handler works on each order (simulated, with a sleep), 0 for no time
 */
public record DemoOptions(boolean help, int messages, double duplicates, double transientFailures, int poison,
                          int concurrency, int maxAttempts, String brokerHost, int brokerPort, String user,
                          String password, String queue, String dlq, String jdbcUrl, String jdbcUser,
                          String jdbcPassword, Duration timeout, long seed, int prometheusPort,
                          Duration prometheusHold, Duration work) {

    /** The usage text printed by {@code --help} and after a bad argument. */
    public static final String USAGE = String.join(System.lineSeparator(),
            "Usage: java -jar samples/plain/target/acemq-samples.jar [options]",
            "",
            "Publishes an order workload with duplicates, transient failures and poison messages, consumes it with",
            "the AceMQ consumer runtime and proves every order was processed exactly once. With no options it starts",
            "an embedded ActiveMQ Artemis broker and uses the in-memory idempotency store: nothing to install.",
            "",
            "Workload:",
            "  --messages N               distinct orders to publish (default 20000)",
            "  --duplicates FRACTION      share of orders re-published with the same message-id, like a retrying",
            "                             publisher (default 0.05)",
            "  --transient-failures FRACTION",
            "                             share of orders whose handler throws on the first attempt (default 0.02)",
            "  --poison N                 orders whose handler always throws; they must end in the DLQ (default 5)",
            "  --concurrency N            handler threads (default 8)",
            "  --work MILLIS              time the handler spends on each order, simulated (default 0)",
            "  --max-attempts N           attempts before a failing message is dead-lettered (default 5)",
            "  --seed N                   seed for picking duplicates, failures and poison (default 42)",
            "  --timeout SECONDS          give up (and fail) if the workload is not done by then (default 120)",
            "",
            "Broker (default: embedded Artemis on a free port, in this process):",
            "  --broker HOST:PORT         use an external AMQP 1.0 broker (tested with ActiveMQ Artemis)",
            "  --user USER --password PW  SASL PLAIN credentials for the broker",
            "  --queue NAME               queue to use (default: orders; acemq-demo-<run id> on an external broker)",
            "  --dlq NAME                 dead-letter queue to check (default: DLQ.<queue>; DLQ on an external broker)",
            "",
            "Idempotency store (default: in-memory):",
            "  --jdbc-url URL             use PostgreSQL (JdbcIdempotencyStore, table created if missing)",
            "  --jdbc-user USER --jdbc-password PW",
            "",
            "Metrics (default: none):",
            "  --prometheus-port PORT     serve the acemq.* meters for Prometheus at http://127.0.0.1:PORT/metrics",
            "                             while the demo runs (0 = any free port; the address is printed)",
            "  --prometheus-hold SECONDS  keep serving them that long after the summary, so that a scrape sees the",
            "                             final counts (default 0)",
            "",
            "  -h, --help                 this text",
            "",
            "Exit status: 0 PASS, 1 FAIL (an order lost or processed twice, poison not dead-lettered, timeout or",
            "error), 2 bad arguments.");

    /** Defaults: 20,000 orders, 5 % duplicates, 2 % transient failures, 5 poison, concurrency 8. */
    public static DemoOptions defaults() {
        return new DemoOptions(false, 20_000, 0.05, 0.02, 5, 8, 5, null, 0, null, null, null, null, null, null, null,
                Duration.ofSeconds(120), 42L, -1, Duration.ZERO, Duration.ZERO);
    }

    /** @return whether an external broker was given */
    public boolean externalBroker() {
        return brokerHost != null;
    }

    /** @return whether a Prometheus endpoint was asked for */
    public boolean prometheus() {
        return prometheusPort >= 0;
    }

    /** @return whether the PostgreSQL store was asked for */
    public boolean jdbc() {
        return jdbcUrl != null;
    }

    /**
     * Parses the command line. Options take their value as the next argument or after {@code =}.
     *
     * @param args the arguments
     * @return the options
     * @throws UsageException if an argument is unknown, lacks its value, or is out of range
     */
    public static DemoOptions parse(String... args) {
        DemoOptions d = defaults();
        boolean help = false;
        int messages = d.messages;
        double duplicates = d.duplicates;
        double transientFailures = d.transientFailures;
        int poison = d.poison;
        int concurrency = d.concurrency;
        int maxAttempts = d.maxAttempts;
        String brokerHost = null;
        int brokerPort = 0;
        String user = null;
        String password = null;
        String queue = null;
        String dlq = null;
        String jdbcUrl = null;
        String jdbcUser = null;
        String jdbcPassword = null;
        Duration timeout = d.timeout;
        long seed = d.seed;
        int prometheusPort = d.prometheusPort;
        Duration prometheusHold = d.prometheusHold;
        Duration work = d.work;

        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String name = arg;
            String value = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            }
            if (name.equals("-h") || name.equals("--help")) {
                help = true;
                continue;
            }
            if (!name.startsWith("--")) {
                throw new UsageException("unexpected argument '" + arg + "'");
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new UsageException(name + " needs a value");
                }
                value = args[++i];
            }
            switch (name) {
                case "--messages" -> messages = intValue(name, value, 1, 10_000_000);
                case "--duplicates" -> duplicates = fraction(name, value);
                case "--transient-failures" -> transientFailures = fraction(name, value);
                case "--poison" -> poison = intValue(name, value, 0, 10_000_000);
                case "--concurrency" -> concurrency = intValue(name, value, 1, 1_000);
                case "--max-attempts" -> maxAttempts = intValue(name, value, 1, 1_000);
                case "--seed" -> seed = longValue(name, value);
                case "--timeout" -> timeout = Duration.ofSeconds(intValue(name, value, 1, 86_400));
                case "--broker" -> {
                    int colon = value.lastIndexOf(':');
                    if (colon <= 0 || colon == value.length() - 1) {
                        throw new UsageException("--broker must be HOST:PORT, but was '" + value + "'");
                    }
                    brokerHost = value.substring(0, colon);
                    brokerPort = intValue(name + " port", value.substring(colon + 1), 1, 65_535);
                }
                case "--user" -> user = notBlank(name, value);
                case "--password" -> password = value;
                case "--queue" -> queue = notBlank(name, value);
                case "--dlq" -> dlq = notBlank(name, value);
                case "--jdbc-url" -> {
                    if (!value.startsWith("jdbc:")) {
                        throw new UsageException("--jdbc-url must start with jdbc:, but was '" + value + "'");
                    }
                    jdbcUrl = value;
                }
                case "--jdbc-user" -> jdbcUser = notBlank(name, value);
                case "--jdbc-password" -> jdbcPassword = value;
                case "--prometheus-port" -> prometheusPort = intValue(name, value, 0, 65_535);
                case "--prometheus-hold" -> prometheusHold = Duration.ofSeconds(intValue(name, value, 0, 86_400));
                case "--work" -> work = Duration.ofMillis(intValue(name, value, 0, 60_000));
                default -> throw new UsageException("unknown option '" + name + "'");
            }
        }
        if (help) {
            return new DemoOptions(true, messages, duplicates, transientFailures, poison, concurrency, maxAttempts,
                    brokerHost, brokerPort, user, password, queue, dlq, jdbcUrl, jdbcUser, jdbcPassword, timeout,
                    seed, prometheusPort, prometheusHold, work);
        }
        if (poison > messages) {
            throw new UsageException("--poison (" + poison + ") must not exceed --messages (" + messages + ")");
        }
        if ((user == null) != (password == null)) {
            throw new UsageException("--user and --password go together");
        }
        if (user != null && brokerHost == null) {
            throw new UsageException("--user/--password need --broker (the embedded broker runs without security)");
        }
        if ((jdbcUser != null || jdbcPassword != null) && jdbcUrl == null) {
            throw new UsageException("--jdbc-user/--jdbc-password need --jdbc-url");
        }
        if (!prometheusHold.isZero() && prometheusPort < 0) {
            throw new UsageException("--prometheus-hold needs --prometheus-port");
        }
        if (transientFailures > 0 && maxAttempts < 2) {
            throw new UsageException("--transient-failures needs --max-attempts of at least 2, or every failing "
                    + "order would be dead-lettered on its first attempt");
        }
        return new DemoOptions(false, messages, duplicates, transientFailures, poison, concurrency, maxAttempts,
                brokerHost, brokerPort, user, password, queue, dlq, jdbcUrl, jdbcUser, jdbcPassword, timeout, seed,
                prometheusPort, prometheusHold, work);
    }

    private static int intValue(String name, String value, int min, int max) {
        long v;
        try {
            v = Long.parseLong(value.replace("_", "").replace(",", ""));
        } catch (NumberFormatException e) {
            throw new UsageException(name + " must be a whole number, but was '" + value + "'");
        }
        if (v < min || v > max) {
            throw new UsageException(name + " must be between " + min + " and " + max + ", but was " + value);
        }
        return (int) v;
    }

    private static long longValue(String name, String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new UsageException(name + " must be a whole number, but was '" + value + "'");
        }
    }

    private static double fraction(String name, String value) {
        double v;
        try {
            String s = value.trim();
            v = s.endsWith("%") ? Double.parseDouble(s.substring(0, s.length() - 1)) / 100.0 : Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw new UsageException(name + " must be a fraction such as 0.05 (or 5%), but was '" + value + "'");
        }
        if (!(v >= 0.0 && v <= 1.0)) {
            throw new UsageException(name + " must be between 0 and 1, but was " + value);
        }
        return v;
    }

    private static String notBlank(String name, String value) {
        if (value.isBlank()) {
            throw new UsageException(name + " must not be blank");
        }
        return value;
    }

    /** Never prints passwords. */
    @Override
    public String toString() {
        return String.format(Locale.ROOT, "DemoOptions[messages=%d, duplicates=%s, transientFailures=%s, poison=%d, "
                        + "concurrency=%d, maxAttempts=%d, broker=%s, queue=%s, dlq=%s, store=%s, timeout=%s, seed=%d, "
                        + "prometheusPort=%d, prometheusHold=%s, work=%s]",
                messages, duplicates, transientFailures, poison, concurrency, maxAttempts,
                brokerHost == null ? "embedded" : brokerHost + ":" + brokerPort, queue, dlq,
                jdbcUrl == null ? "in-memory" : "jdbc", timeout, seed, prometheusPort, prometheusHold, work);
    }

    /** A bad command line; {@link OrdersDemo} prints the message and the usage and exits with status 2. */
    public static final class UsageException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** @param message what is wrong */
        public UsageException(String message) {
            super(message);
        }
    }
}

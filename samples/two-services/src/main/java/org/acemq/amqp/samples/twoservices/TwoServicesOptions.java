package org.acemq.amqp.samples.twoservices;

import java.time.Duration;
import java.util.Locale;

/**
 * The command line of {@link TwoServicesDemo}, parsed and validated. Immutable.
 *
 * @param help whether {@code --help} was given (everything else is then ignored)
 * @param orders distinct orders
 * @param duplicates share of orders whose command is published again with the same message-id
 * @param newIdRetries share of orders whose command is published again under a new message-id
 * @param concurrency handler threads per service
 * @param brokerHost external broker host, or null for the embedded broker
 * @param brokerPort external broker port
 * @param user broker user, or null
 * @param password broker password, or null
 * @param jdbcUrl PostgreSQL JDBC URL, or null to find one as the project's tests do
 * @param jdbcUser database user, or null
 * @param jdbcPassword database password, or null
 * @param timeout how long to wait for every order to reach the shipping service
 * @param seed seed of the command plan
 */
public record TwoServicesOptions(boolean help, int orders, double duplicates, double newIdRetries, int concurrency,
                                 String brokerHost, int brokerPort, String user, String password, String jdbcUrl,
                                 String jdbcUser, String jdbcPassword, Duration timeout, long seed) {

    /** The usage text printed by {@code --help} and after a bad argument. */
    public static final String USAGE = String.join(System.lineSeparator(),
            "Usage: java -jar samples/two-services/target/acemq-samples-two-services.jar [options]",
            "",
            "Two services on one broker: the order service consumes PlaceOrder commands, writes an order row and",
            "sends OrderAccepted through the transactional outbox; the shipping service consumes OrderAccepted and",
            "writes a shipment row. Publishes the commands with duplicates and publisher retries under new ids,",
            "and proves from both services' tables that every order has exactly one row in each. With no options",
            "it starts an embedded ActiveMQ Artemis broker and finds PostgreSQL as the project's tests do",
            "(ACEMQ_TEST_JDBC_URL, else real PostgreSQL binaries it unpacks and starts): nothing to install.",
            "",
            "Workload:",
            "  --orders N                 distinct orders (default 2000)",
            "  --duplicates FRACTION      share of commands published again with the same message-id (default 0.05)",
            "  --new-id-retries FRACTION  share of commands published again under a new message-id, as a publisher",
            "                             that builds a fresh message for its retry does (default 0.03)",
            "  --concurrency N            handler threads per service (default 4)",
            "  --seed N                   seed of the plan (default 42)",
            "  --timeout SECONDS          give up (and fail) if the orders are not all shipped by then (default 120)",
            "",
            "Broker (default: embedded Artemis on a free port, in this process):",
            "  --broker HOST:PORT         use an external AMQP 1.0 broker (tested with ActiveMQ Artemis); the queues",
            "                             are place-order-<run id> and order-accepted-<run id>",
            "  --user USER --password PW  SASL PLAIN credentials for the broker",
            "",
            "Database (default: ACEMQ_TEST_JDBC_URL, else embedded PostgreSQL binaries):",
            "  --jdbc-url URL             a PostgreSQL database; the schemas order_service and shipping_service and",
            "                             their tables are created if missing (rows of other runs are left alone)",
            "  --jdbc-user USER --jdbc-password PW",
            "",
            "  -h, --help                 this text",
            "",
            "Exit status: 0 PASS, 1 FAIL (an order lost, or with two rows in a service, timeout or error),",
            "2 bad arguments.");

    /** Defaults: 2,000 orders, 5 % duplicates, 3 % retries with a new id, concurrency 4 per service. */
    public static TwoServicesOptions defaults() {
        return new TwoServicesOptions(false, 2_000, 0.05, 0.03, 4, null, 0, null, null, null, null, null,
                Duration.ofSeconds(120), 42L);
    }

    /** @return whether an external broker was given */
    public boolean externalBroker() {
        return brokerHost != null;
    }

    /**
     * Parses the command line. Options take their value as the next argument or after {@code =}.
     *
     * @param args the arguments
     * @return the options
     * @throws UsageException if an argument is unknown, lacks its value, or is out of range
     */
    public static TwoServicesOptions parse(String... args) {
        TwoServicesOptions d = defaults();
        boolean help = false;
        int orders = d.orders;
        double duplicates = d.duplicates;
        double newIdRetries = d.newIdRetries;
        int concurrency = d.concurrency;
        String brokerHost = null;
        int brokerPort = 0;
        String user = null;
        String password = null;
        String jdbcUrl = null;
        String jdbcUser = null;
        String jdbcPassword = null;
        Duration timeout = d.timeout;
        long seed = d.seed;
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
                case "--orders" -> orders = intValue(name, value, 1, 10_000_000);
                case "--duplicates" -> duplicates = fraction(name, value);
                case "--new-id-retries" -> newIdRetries = fraction(name, value);
                case "--concurrency" -> concurrency = intValue(name, value, 1, 1_000);
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
                case "--jdbc-url" -> {
                    if (!value.startsWith("jdbc:postgresql:")) {
                        throw new UsageException("--jdbc-url must be a PostgreSQL URL (jdbc:postgresql:...), but was '"
                                + value + "'");
                    }
                    jdbcUrl = value;
                }
                case "--jdbc-user" -> jdbcUser = notBlank(name, value);
                case "--jdbc-password" -> jdbcPassword = value;
                default -> throw new UsageException("unknown option '" + name + "'");
            }
        }
        if (!help) {
            if ((user == null) != (password == null)) {
                throw new UsageException("--user and --password go together");
            }
            if (user != null && brokerHost == null) {
                throw new UsageException("--user/--password need --broker (the embedded broker runs without security)");
            }
            if ((jdbcUser != null || jdbcPassword != null) && jdbcUrl == null) {
                throw new UsageException("--jdbc-user/--jdbc-password need --jdbc-url");
            }
        }
        return new TwoServicesOptions(help, orders, duplicates, newIdRetries, concurrency, brokerHost, brokerPort,
                user, password, jdbcUrl, jdbcUser, jdbcPassword, timeout, seed);
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
        return String.format(Locale.ROOT, "TwoServicesOptions[orders=%d, duplicates=%s, newIdRetries=%s, "
                        + "concurrency=%d, broker=%s, database=%s, timeout=%s, seed=%d]", orders, duplicates,
                newIdRetries, concurrency, brokerHost == null ? "embedded" : brokerHost + ":" + brokerPort,
                jdbcUrl == null ? "found" : jdbcUrl, timeout, seed);
    }

    /** A bad command line; {@link TwoServicesDemo} prints the message and the usage and exits with status 2. */
    public static final class UsageException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** @param message what is wrong */
        public UsageException(String message) {
            super(message);
        }
    }
}

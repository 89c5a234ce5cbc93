package org.acemq.amqp.testinfra;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/**
 * Runs {@link EmbeddedArtemis} in its own JVM (for benchmarks and crash harnesses).
 *
 * <pre>
 * java -cp ... org.acemq.amqp.testinfra.EmbeddedArtemisMain [--port N] [--persistent true|false] [--data DIR]
 *      [--max-delivery-attempts N] [--redelivery-delay-ms MS] [--user U --password P]
 * </pre>
 *
 * Prints exactly one line {@code READY port=<port>} on stdout once the broker is active, and nothing else on
 * stdout. Stops the broker on SIGTERM/SIGINT (shutdown hook). Without {@code --data}, a persistent broker
 * uses a temporary directory that is deleted when it stops. Exit code 2 for bad arguments, 1 if the broker
 * does not start.
 */
public final class EmbeddedArtemisMain {

    private EmbeddedArtemisMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        EmbeddedArtemis.Builder builder = EmbeddedArtemis.builder();
        String user = null;
        String password = null;
        try {
            for (int i = 0; i < args.length; i++) {
                String arg = args[i];
                if (arg.equals("--help") || arg.equals("-h")) {
                    usage(null);
                    System.exit(0);
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value for " + arg);
                }
                String value = args[++i];
                switch (arg) {
                    case "--port" -> builder.port(Integer.parseInt(value));
                    case "--persistent" -> builder.persistent(parseBoolean(value));
                    case "--data" -> builder.dataDirectory(Path.of(value));
                    case "--max-delivery-attempts" -> builder.maxDeliveryAttempts(Integer.parseInt(value));
                    case "--redelivery-delay-ms" -> builder.redeliveryDelay(Duration.ofMillis(Long.parseLong(value)));
                    case "--user" -> user = value;
                    case "--password" -> password = value;
                    default -> throw new IllegalArgumentException("unknown option " + arg);
                }
            }
            if ((user == null) != (password == null)) {
                throw new IllegalArgumentException("--user and --password go together");
            }
            if (user != null) {
                builder.requireCredentials(user, password);
            }
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
            System.exit(2);
            return;
        }

        EmbeddedArtemis broker = builder.build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                broker.close();
            } finally {
                stopped.countDown();
            }
        }, "embedded-artemis-shutdown"));
        try {
            broker.start();
        } catch (RuntimeException e) {
            e.printStackTrace(System.err);
            System.exit(1);
            return;
        }
        System.out.println("READY port=" + broker.port());
        System.out.flush();
        stopped.await();
    }

    private static boolean parseBoolean(String value) {
        if (value.equalsIgnoreCase("true")) {
            return true;
        }
        if (value.equalsIgnoreCase("false")) {
            return false;
        }
        throw new IllegalArgumentException("expected true or false, got " + value);
    }

    private static void usage(String error) {
        if (error != null) {
            System.err.println("error: " + error);
        }
        System.err.println("usage: EmbeddedArtemisMain [--port N] [--persistent true|false] [--data DIR]"
                + " [--max-delivery-attempts N] [--redelivery-delay-ms MS] [--user U --password P]");
    }
}

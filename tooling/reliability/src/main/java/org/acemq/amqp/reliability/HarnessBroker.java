package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.acemq.amqp.testinfra.rabbitmq.RabbitMq;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/**
 * The broker the harness runs against, with the few things the harness does to it besides AMQP: count messages,
 * cut every client connection, restart it with its data. {@code artemis}: {@link EmbeddedArtemis} in the harness JVM
 * (persistent journal). {@code rabbitmq}: the RabbitMQ of {@link RabbitMqProvider} (a private node from the Debian
 * package here), a durable classic queue declared beforehand and addressed as {@code /amq/queue/NAME} (3.x), and
 * dead-lettering by policy; the consumers reach it through a {@link TcpProxy} so that a connection cut is a real
 * socket close.
 */
interface HarnessBroker extends AutoCloseable {

    /** @return {@code artemis} or {@code rabbitmq} */
    String kind();

    /** @return host the consumers connect to */
    String host();

    /** @return port the consumers connect to */
    int consumerPort();

    /** @return user for AMQP, or null for anonymous */
    String user();

    /** @return password for AMQP, or null */
    String password();

    /** @return the address the consumers and the publisher use for the queue */
    String queueAddress();

    /** @return a client for publishing and draining (not through a proxy) */
    AmqpTestClient client();

    /** @return messages in the queue (ready), or {@link Long#MAX_VALUE} while the broker cannot tell */
    long queued();

    /** @return deliveries not yet settled, 0 where the broker cannot tell (RabbitMQ's 0-9-1 counts only ready ones) */
    long delivering();

    /** @return messages in the dead-letter queue, or {@link Long#MAX_VALUE} while the broker cannot tell */
    long deadLettered();

    /**
     * @return whether the broker may drop a message it took back with {@code rejected} instead of dead-lettering it:
     *     RabbitMQ 3 dead-letters from classic queues without publisher confirms (at most once), so a restart while
     *     dead letters are being re-published loses some; Artemis moves them in its journal (never)
     */
    default boolean deadLettersAtMostOnce() {
        return false;
    }

    /** @return every dead-lettered message, taken and accepted */
    List<AmqpTestClient.ReceivedMessage> drainDeadLetters();

    /** Closes every consumer connection without an AMQP close; @return how many were cut */
    int cutConnections();

    /** Stops the broker and starts it again on the same port with its data. */
    void restart();

    @Override
    void close();

    /** @return the broker of that kind, started (work directory for Artemis's journal) */
    static HarnessBroker start(String kind, Path workDir, String queue) throws IOException {
        return switch (kind) {
            case "artemis" -> new Artemis(workDir, queue);
            case "rabbitmq" -> new Rabbit(queue);
            default -> throw new IllegalArgumentException("--broker must be artemis or rabbitmq, was " + kind);
        };
    }

    /** Embedded Artemis with a persistent journal; see docs/reliability.md, "Topology". */
    final class Artemis implements HarnessBroker {
        private final EmbeddedArtemis broker;
        private final String queue;

        Artemis(Path workDir, String queue) {
            this.queue = queue;
            this.broker = EmbeddedArtemis.builder()
                    .persistent(true)
                    .dataDirectory(workDir.resolve("broker"))
                    .maxDeliveryAttempts(-1) // the runtime decides what is poison, with the store's attempt count
                    .redeliveryDelay(Duration.ZERO)
                    // the broker drops a silent (SIGSTOPped) consumer after 2 s, so its deliveries go to others
                    .acceptorParameters("amqpIdleTimeout=2000")
                    .build().start();
            try (AmqpTestClient admin = AmqpTestClient.connect(broker)) {
                admin.drain(queue); // creates the queue
            }
        }

        @Override public String kind() { return "artemis"; }
        @Override public String host() { return broker.host(); }
        @Override public int consumerPort() { return broker.port(); }
        @Override public String user() { return null; }
        @Override public String password() { return null; }
        @Override public String queueAddress() { return queue; }
        @Override public AmqpTestClient client() { return AmqpTestClient.connect(broker.host(), broker.port()); }

        @Override
        public long queued() {
            try {
                return broker.messageCount(queue);
            } catch (RuntimeException e) {
                return Long.MAX_VALUE; // restarting
            }
        }

        @Override
        public long delivering() {
            try {
                return broker.deliveringCount(queue);
            } catch (RuntimeException e) {
                return Long.MAX_VALUE;
            }
        }

        @Override
        public long deadLettered() {
            try {
                return broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue));
            } catch (RuntimeException e) {
                return Long.MAX_VALUE;
            }
        }

        @Override
        public List<AmqpTestClient.ReceivedMessage> drainDeadLetters() {
            try (AmqpTestClient admin = AmqpTestClient.connect(broker)) {
                return admin.drain(EmbeddedArtemis.deadLetterQueueName(queue));
            }
        }

        @Override public int cutConnections() { return broker.dropAllConnections(); }

        /**
         * {@link EmbeddedArtemis#restart()} first pauses the acceptor and drops every connection, which avoids a
         * deadlock of Artemis 2.55.0's stop with consumers attached (docs/reliability.md, "Findings").
         */
        @Override public void restart() { broker.restart(); }
        @Override public void close() { broker.close(); }
        @Override public String toString() { return broker.toString(); }
    }

    /** RabbitMQ 3.x from {@link RabbitMqProvider}, the consumers behind a proxy. */
    final class Rabbit implements HarnessBroker {
        private final RabbitMq broker;
        private final String queue;
        private final TcpProxy proxy;

        Rabbit(String queue) throws IOException {
            this.broker = RabbitMqProvider.shared();
            this.queue = queue;
            broker.declareQueue(queue);
            this.proxy = new TcpProxy(broker.host(), broker.port(), "amqp-proxy");
        }

        @Override public boolean deadLettersAtMostOnce() { return true; }
        @Override public String kind() { return "rabbitmq"; }
        @Override public String host() { return "127.0.0.1"; }
        @Override public int consumerPort() { return proxy.port(); }
        @Override public String user() { return broker.user(); }
        @Override public String password() { return broker.password(); }
        @Override public String queueAddress() { return broker.queueAddress(queue); }

        @Override
        public AmqpTestClient client() {
            return AmqpTestClient.connect(broker.host(), broker.port(), broker.user(), broker.password());
        }

        @Override
        public long queued() {
            try {
                return broker.readyCount(queue);
            } catch (RuntimeException e) {
                return Long.MAX_VALUE;
            }
        }

        @Override public long delivering() { return 0; }

        @Override
        public long deadLettered() {
            try {
                return broker.readyCount(RabbitMq.deadLetterQueueName(queue));
            } catch (RuntimeException e) {
                return Long.MAX_VALUE;
            }
        }

        @Override
        public List<AmqpTestClient.ReceivedMessage> drainDeadLetters() {
            String dlq = RabbitMq.deadLetterQueueName(queue);
            int available = (int) broker.readyCount(dlq);
            if (available == 0) {
                return List.of();
            }
            try (AmqpTestClient c = client()) {
                return c.receive(broker.queueAddress(dlq), available, Duration.ofSeconds(60));
            }
        }

        @Override
        public int cutConnections() {
            return proxy.cut();
        }

        @Override
        public void restart() {
            broker.restart();
        }

        @Override
        public void close() {
            proxy.close();
            // the node itself belongs to RabbitMqProvider (its shutdown hook stops it); each run has its own queue
        }

        @Override public String toString() { return broker + " (consumers through proxy port " + proxy.port() + ")"; }
    }
}

package org.acemq.amqp.testinfra.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeoutException;

/**
 * A RabbitMQ the tests may use, from {@link RabbitMqProvider#shared()}: where it is, which version it is, and the
 * administration the scenarios need, done over AMQP 0-9-1 with RabbitMQ's own Java client (durable queues with their
 * dead-letter queues, message counts) or by the {@link BrokerControl} of its source (restart, log file).
 *
 * <p>AMQP 1.0 and 0-9-1 share the port. Queues the tests use must be named {@code interop.…}: only those are covered
 * by the dead-letter policy every test broker carries ({@link DeadLettering}).
 *
 * <p><b>Threading:</b> thread-safe; every administrative call opens and closes its own 0-9-1 connection, so calls
 * work across broker restarts.
 */
public final class RabbitMq {

    /** Where the broker came from. */
    public enum Source {
        /** An existing broker named by {@value RabbitMqProvider#URL_ENV}. */
        ENVIRONMENT,
        /** A Docker container started by Testcontainers ({@value RabbitMqProvider#DOCKER_IMAGE}). */
        TESTCONTAINERS,
        /** A private node started from the installed Debian package {@code rabbitmq-server}. */
        LOCAL_NODE
    }

    private final Source source;
    private final String host;
    private final int port;
    private final String user;
    private final String password;
    private final BrokerControl control;
    private volatile String version;

    RabbitMq(Source source, String host, int port, String user, String password, BrokerControl control) {
        this.source = Objects.requireNonNull(source, "source");
        this.host = Objects.requireNonNull(host, "host");
        this.port = port;
        this.user = Objects.requireNonNull(user, "user");
        this.password = Objects.requireNonNull(password, "password");
        this.control = Objects.requireNonNull(control, "control");
    }

    /** Connects once, reads the version and declares the dead-letter exchange. */
    RabbitMq verify() {
        withChannel(ch -> {
            version = String.valueOf(ch.getConnection().getServerProperties().get("version"));
            ch.exchangeDeclare(DeadLettering.EXCHANGE, "direct", true);
            return null;
        });
        return this;
    }

    /** @return where the broker came from */
    public Source source() {
        return source;
    }

    /** @return the host AMQP clients connect to */
    public String host() {
        return host;
    }

    /** @return the AMQP port (1.0 and 0-9-1) */
    public int port() {
        return port;
    }

    /** @return the user name (SASL PLAIN) */
    public String user() {
        return user;
    }

    /** @return the password */
    public String password() {
        return password;
    }

    /** @return the broker's version as it announces itself, e.g. {@code 3.10.8} */
    public String version() {
        return version;
    }

    /** @return the major version (3 or 4 today) */
    public int majorVersion() {
        String v = version == null ? "" : version;
        int dot = v.indexOf('.');
        try {
            return Integer.parseInt(dot < 0 ? v : v.substring(0, dot));
        } catch (NumberFormatException e) {
            throw new IllegalStateException("cannot read the RabbitMQ version '" + v + "'", e);
        }
    }

    /**
     * The AMQP 1.0 address of an existing queue, for senders and receivers alike: {@code /amq/queue/NAME} on 3.x
     * (address format v1), {@code /queues/NAME} (percent-encoded) on 4.x (format v2; v1 is deprecated there).
     *
     * @param queue the queue name
     * @return the address
     */
    public String queueAddress(String queue) {
        return majorVersion() >= 4
                ? "/queues/" + URLEncoder.encode(queue, StandardCharsets.UTF_8).replace("+", "%20")
                : "/amq/queue/" + queue;
    }

    /** @return the name of the dead-letter queue {@link #declareQueue} gives {@code queue} */
    public static String deadLetterQueueName(String queue) {
        return DeadLettering.DLQ_PREFIX + queue;
    }

    /**
     * Declares a durable classic queue and its dead-letter queue {@link #deadLetterQueueName}, bound to the dead-letter
     * exchange with the queue's name, as an operator would before deploying a consumer. Idempotent.
     *
     * @param queue the queue name; must start with {@code interop.}
     * @throws IllegalArgumentException if the name is not covered by the dead-letter policy
     */
    public void declareQueue(String queue) {
        declareQueue(queue, Map.of());
    }

    /**
     * As {@link #declareQueue(String)}, with queue arguments, which only a declaration can set (policies cannot): for
     * example {@code x-single-active-consumer}. The AMQP 1.0 plugin cannot declare queues with arguments, so this
     * goes over AMQP 0-9-1, as an operator's set-up would.
     *
     * @param queue the queue name; must start with {@code interop.}
     * @param arguments the queue's arguments
     * @throws IllegalArgumentException if the name is not covered by the dead-letter policy
     */
    public void declareQueue(String queue, Map<String, Object> arguments) {
        if (!queue.startsWith(DeadLettering.QUEUE_PREFIX)) {
            throw new IllegalArgumentException("queue must start with '" + DeadLettering.QUEUE_PREFIX
                    + "' (the dead-letter policy covers only those), but was '" + queue + "'");
        }
        String dlq = deadLetterQueueName(queue);
        withChannel(ch -> {
            ch.queueDeclare(dlq, true, false, false, Map.of());
            ch.queueBind(dlq, DeadLettering.EXCHANGE, queue);
            ch.queueDeclare(queue, true, false, false, arguments);
            return null;
        });
    }

    /**
     * The AMQP 1.0 address a publisher sends to an exchange with: {@code /exchange/NAME} on 3.x (address format v1,
     * the routing key taken from the message's subject), {@code /exchanges/NAME} (percent-encoded) on 4.x.
     *
     * @param exchange the exchange name
     * @return the address
     */
    public String exchangeAddress(String exchange) {
        return majorVersion() >= 4
                ? "/exchanges/" + URLEncoder.encode(exchange, StandardCharsets.UTF_8).replace("+", "%20")
                : "/exchange/" + exchange;
    }

    /**
     * Declares a durable fanout exchange and binds the given queues to it, each declared as {@link #declareQueue}
     * does (durable, with its dead-letter queue), as an operator sets up a publish/subscribe topology. Idempotent.
     *
     * @param exchange the exchange name
     * @param queues the queue names; each must start with {@code interop.}
     */
    public void declareFanout(String exchange, String... queues) {
        for (String queue : queues) {
            declareQueue(queue);
        }
        withChannel(ch -> {
            ch.exchangeDeclare(exchange, "fanout", true);
            for (String queue : queues) {
                ch.queueBind(queue, exchange, "");
            }
            return null;
        });
    }

    /**
     * @param queue a queue name
     * @return the messages in the queue that are ready for delivery (not those delivered and not yet settled)
     */
    public long readyCount(String queue) {
        return withChannel(ch -> (long) ch.queueDeclarePassive(queue).getMessageCount());
    }

    /**
     * @param queue a queue name
     * @return how many consumers the queue has
     */
    public int consumerCount(String queue) {
        return withChannel(ch -> ch.queueDeclarePassive(queue).getConsumerCount());
    }

    /** Stops the broker and starts it again with the same data and port; returns once it accepts clients. */
    public void restart() {
        control.restart();
        verify();
    }

    /** @return the broker's own log file, or null where the tests cannot read it (Docker, an existing broker) */
    public Path logFile() {
        return control.logFile();
    }

    /** Stops what the tests started. */
    void close() {
        control.close();
    }

    @Override
    public String toString() {
        return "RabbitMQ " + version + " (" + source + ") at " + host + ":" + port;
    }

    private interface ChannelCall<T> {
        T apply(Channel channel) throws IOException;
    }

    private <T> T withChannel(ChannelCall<T> call) {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(host);
        factory.setPort(port);
        factory.setUsername(user);
        factory.setPassword(password);
        factory.setConnectionTimeout(10_000);
        factory.setAutomaticRecoveryEnabled(false);
        try (Connection connection = factory.newConnection("acemq-interop-admin");
             Channel channel = connection.createChannel()) {
            return call.apply(channel);
        } catch (IOException | TimeoutException e) {
            throw new IllegalStateException("RabbitMQ administration over AMQP 0-9-1 at " + host + ":" + port
                    + " failed: " + e, e);
        }
    }
}

package org.acemq.amqp.testinfra.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The RabbitMQ the tests get: AMQP 1.0 works, the dead-letter policy is in force, a private node cleans up after
 * itself. (A restart keeping durable queues and messages is part of the broker-restart scenario.)
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class RabbitMqProviderIT {

    @Test
    void theSharedBrokerTakesAmqp10AndDeadLettersARejectedMessageThroughThePolicy() throws Exception {
        RabbitMq rabbit = RabbitMqProvider.shared();
        assertThat(rabbit.majorVersion()).as("version of %s", rabbit).isBetween(3, 4);
        String queue = "interop.provider." + UUID.randomUUID();
        rabbit.declareQueue(queue);
        String address = rabbit.queueAddress(queue);
        try (AmqpTestClient client = AmqpTestClient.connect(rabbit.host(), rabbit.port(), rabbit.user(),
                rabbit.password())) {
            client.send(address, AmqpTestClient.message("keep", "a"), AmqpTestClient.message("reject", "b"));
            assertThat(rabbit.readyCount(queue)).isEqualTo(2);

            try (Receiver receiver = client.connection().openReceiver(address,
                    new ReceiverOptions().autoAccept(false).creditWindow(0))) {
                receiver.addCredit(2);
                for (int i = 0; i < 2; i++) {
                    Delivery d = receiver.receive(30, TimeUnit.SECONDS);
                    assertThat(d).as("delivery %d", i).isNotNull();
                    if ("reject".equals(d.message().messageId())) {
                        d.reject("test:rejected", "dead-letter me");
                    } else {
                        d.accept();
                    }
                }
            }
            String dlq = RabbitMq.deadLetterQueueName(queue);
            Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> rabbit.readyCount(dlq) == 1);
            List<ReceivedMessage> dead = client.receive(rabbit.queueAddress(dlq), 1, Duration.ofSeconds(30));
            assertThat(dead).extracting(ReceivedMessage::messageId).containsExactly("reject");
            assertThat(rabbit.readyCount(queue)).isZero();
        }
    }

    @Test
    void aPrivateNodeServesAmqpAndLeavesNothingBehindWhenClosed() throws Exception {
        assertThat(LocalRabbitMqNode.installed()).as("the Debian package rabbitmq-server is installed ("
                + RabbitMqUnavailableException.HOW_TO_PROVIDE + ")").isTrue();
        LocalRabbitMqNode node = LocalRabbitMqNode.start();
        Path directory = node.directory();
        long pid;
        try {
            System.out.printf("private RabbitMQ node started in %d ms%n", node.lastStartTime().toMillis());
            RabbitMq rabbit = new RabbitMq(RabbitMq.Source.LOCAL_NODE, node.host(), node.amqpPort(), "guest", "guest",
                    node).verify();
            String queue = "interop.private." + UUID.randomUUID();
            rabbit.declareQueue(queue);
            try (AmqpTestClient client = AmqpTestClient.connect(node.host(), node.amqpPort(), "guest", "guest")) {
                client.send(rabbit.queueAddress(queue), AmqpTestClient.message("m-1", "x"));
            }
            assertThat(rabbit.readyCount(queue)).isEqualTo(1);
            pid = node.pid();
            assertThat(pid).isPositive();
        } finally {
            node.close();
        }
        assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).as("node process alive").isFalse();
        assertThat(Files.exists(directory)).as("node directory %s exists", directory).isFalse();
        assertThat(portFree(node.amqpPort())).as("AMQP port %d is free", node.amqpPort()).isTrue();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost(node.host());
        factory.setPort(node.amqpPort());
        factory.setConnectionTimeout(2000);
        assertThat(canConnect(factory)).as("a client can still connect").isFalse();
    }

    private static boolean portFree(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean canConnect(ConnectionFactory factory) {
        try (Connection c = factory.newConnection()) {
            return true;
        } catch (Exception e) {
            return false;
        }
    }
}

package org.acemq.amqp.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMq;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;

/**
 * The RabbitMQ of {@link org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider}, set up as an operator would for a
 * consumer: a durable classic queue declared beforehand, dead-lettering through a policy, the AMQP 1.0 address of
 * the queue ({@code /amq/queue/NAME} on 3.x, {@code /queues/NAME} on 4.x) for consumer and publisher alike.
 */
final class RabbitMqUnderTest implements InteropBroker {

    private final RabbitMq broker;
    private final String run = UUID.randomUUID().toString().substring(0, 6);
    private final AtomicInteger queues = new AtomicInteger();

    RabbitMqUnderTest(RabbitMq broker) {
        this.broker = broker;
    }

    @Override
    public String name() {
        return "rabbitmq";
    }

    @Override
    public String description() {
        return broker.toString();
    }

    @Override
    public ConnectionSettings connection() {
        return ConnectionSettings.builder(broker.host(), broker.port())
                .credentials(broker.user(), broker.password())
                .build();
    }

    @Override
    public TestQueue newQueue(String scenario) {
        String queue = "interop." + scenario + "." + run + "." + queues.incrementAndGet();
        broker.declareQueue(queue);
        return new TestQueue(queue, broker.queueAddress(queue));
    }

    @Override
    public void publish(TestQueue queue, List<MessageSpec> messages) {
        try (AmqpTestClient client = client()) {
            client.send(queue.address(), messages);
        }
    }

    /** Messages ready in the queue (AMQP 0-9-1 cannot count those delivered and not yet settled). */
    @Override
    public long messagesLeft(TestQueue queue) {
        return broker.readyCount(queue.name());
    }

    @Override
    public Optional<List<String>> takeDeadLetters(TestQueue queue, int expected) {
        String dlq = RabbitMq.deadLetterQueueName(queue.name());
        // dead-lettering follows the consumer's reject asynchronously
        ScenarioRun.awaitQuietly(ScenarioRun.DEAD_LETTER_WAIT, () -> broker.readyCount(dlq) >= expected);
        int available = (int) broker.readyCount(dlq);
        List<String> ids = new ArrayList<>();
        if (available > 0) {
            try (AmqpTestClient client = client()) {
                for (ReceivedMessage m : client.receive(broker.queueAddress(dlq), available, Duration.ofSeconds(30))) {
                    ids.add(String.valueOf(m.messageId()));
                }
            }
        }
        return Optional.of(ids);
    }

    @Override
    public void restart() {
        broker.restart();
    }

    @Override
    public LogWindow errorLog() {
        return LogWindow.of(broker.logFile(), LogWindow.RABBITMQ_ERROR);
    }

    private AmqpTestClient client() {
        return AmqpTestClient.connect(broker.host(), broker.port(), broker.user(), broker.password());
    }
}

package org.acemq.amqp.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.ArtemisAddressSettings;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.core.postoffice.Binding;
import org.apache.activemq.artemis.core.postoffice.Bindings;
import org.apache.activemq.artemis.core.postoffice.impl.LocalQueueBinding;
import org.apache.activemq.artemis.core.server.ActiveMQServer;

/**
 * The in-JVM Artemis of {@code test-infra}, persistent (a restart keeps durable messages), in one of two set-ups:
 * {@link ArtemisAddressSettings#TEST_DEFAULTS} as the project's tests configure it (with the broker's own
 * max-delivery-attempts off, so that the consumer's {@code maxAttempts} decides what is poison), or
 * {@link ArtemisAddressSettings#STOCK}, Artemis' built-in defaults. Addresses are plain queue names on both.
 */
final class ArtemisUnderTest implements InteropBroker {

    private final EmbeddedArtemis broker;
    private final String name;
    private final AtomicInteger queues = new AtomicInteger();

    private ArtemisUnderTest(EmbeddedArtemis broker, String name) {
        this.broker = broker;
        this.name = name;
    }

    /** Starts a persistent broker with these address settings. */
    static ArtemisUnderTest start(ArtemisAddressSettings settings) {
        EmbeddedArtemis broker = EmbeddedArtemis.builder()
                .persistent(true)
                .maxDeliveryAttempts(-1)
                .addressSettings(settings)
                .build()
                .start();
        return new ArtemisUnderTest(broker, settings == ArtemisAddressSettings.STOCK ? "artemis-stock" : "artemis");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String description() {
        return "Artemis " + broker.server().getVersion().getFullVersion() + " embedded, persistent, "
                + broker.addressSettings() + " address settings, port " + broker.port();
    }

    @Override
    public ConnectionSettings connection() {
        return ConnectionSettings.builder(broker.host(), broker.port()).build();
    }

    @Override
    public TestQueue newQueue(String scenario) {
        String queue = "interop." + scenario + "." + queues.incrementAndGet();
        return new TestQueue(queue, queue);
    }

    @Override
    public void publish(TestQueue queue, List<MessageSpec> messages) {
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(queue.address(), messages);
        }
    }

    /** Messages in every queue bound to the address (ready, delivered and unsettled, or scheduled). */
    @Override
    public long messagesLeft(TestQueue queue) {
        ActiveMQServer server = broker.server();
        long total = 0;
        try {
            Bindings bindings = server.getPostOffice().getBindingsForAddress(SimpleString.of(queue.address()));
            for (Binding b : bindings.getBindings()) {
                if (b instanceof LocalQueueBinding q) {
                    total += q.getQueue().getMessageCount();
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("cannot read the bindings of " + queue.address() + ": " + e, e);
        }
        return total;
    }

    @Override
    public Optional<List<String>> takeDeadLetters(TestQueue queue, int expected) {
        if (broker.addressSettings() == ArtemisAddressSettings.STOCK) {
            return Optional.empty(); // no dead-letter address: the broker drops what is rejected (AMQ222149 is not logged)
        }
        List<String> ids = new ArrayList<>();
        String dlq = EmbeddedArtemis.deadLetterQueueName(queue.name());
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            // dead-lettering follows the consumer's reject asynchronously: take what is there until enough arrived
            ScenarioRun.awaitQuietly(ScenarioRun.DEAD_LETTER_WAIT, () -> {
                for (ReceivedMessage m : client.drain(dlq)) {
                    ids.add(String.valueOf(m.messageId()));
                }
                return ids.size() >= expected;
            });
        }
        return Optional.of(ids);
    }

    @Override
    public void restart() {
        broker.restart();
    }

    @Override
    public LogWindow errorLog() {
        return LogWindow.suiteLog(LogWindow.ARTEMIS_ERROR);
    }

    /** Stops the broker and deletes its data. */
    void close() {
        broker.close();
    }
}

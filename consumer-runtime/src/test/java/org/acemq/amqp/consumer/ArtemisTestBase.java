package org.acemq.amqp.consumer;

import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Base of the end-to-end ITs that share one in-JVM Artemis broker per test class ({@link E2e#broker(boolean)}, not
 * persistent) and a test client connected to it, for sending and inspecting queues.
 */
abstract class ArtemisTestBase {

    static EmbeddedArtemis broker;
    static AmqpTestClient client;

    @BeforeAll
    static void startBroker() {
        broker = E2e.broker(false);
        client = AmqpTestClient.connect(broker);
    }

    @AfterAll
    static void stopBroker() {
        if (client != null) {
            client.close();
            client = null;
        }
        if (broker != null) {
            broker.close();
            broker = null;
        }
    }
}

package org.acemq.amqp.interop;

import java.util.List;
import java.util.Optional;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;

/**
 * A broker the scenarios run against, seen the way an application team sees it: where to connect, which address to
 * consume, how to publish, and what an operator can look at (messages left, dead letters, the broker's log) or do
 * (restart it). The consumer itself is only ever configured with {@link #connection()} and an address.
 */
interface InteropBroker {

    /** A queue of one scenario: its name on the broker and the AMQP address that consumers and publishers use. */
    record TestQueue(String name, String address) {
    }

    /** @return a short name for reports, e.g. {@code rabbitmq} */
    String name();

    /** @return product, version and set-up, for reports */
    String description();

    /** @return the consumer's connection settings: the defaults, plus credentials where the broker requires them */
    ConnectionSettings connection();

    /**
     * Prepares a new queue the way an operator of this broker would (nothing on Artemis, whose queues are created on
     * first use; a durable queue with a dead-letter queue on RabbitMQ).
     *
     * @param scenario a short name; the queue name is unique per call
     * @return the queue
     */
    TestQueue newQueue(String scenario);

    /** Sends the messages to the queue's address and waits until the broker has accepted every one. */
    void publish(TestQueue queue, List<MessageSpec> messages);

    /** @return messages the broker still holds for this queue (see each implementation for what is counted) */
    long messagesLeft(TestQueue queue);

    /**
     * Takes the messages that were dead-lettered from this queue.
     *
     * @param expected how many the caller expects (read at least this many if they arrive)
     * @return their message ids; empty if this broker has no dead-letter queue for it (stock Artemis drops them)
     */
    Optional<List<String>> takeDeadLetters(TestQueue queue, int expected);

    /** Stops the broker and starts it again with the same data on the same port. */
    void restart();

    /** @return a window on the broker's log from now on, counting error lines (unavailable where it cannot be read) */
    LogWindow errorLog();
}

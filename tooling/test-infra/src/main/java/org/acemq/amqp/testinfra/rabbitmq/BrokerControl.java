package org.acemq.amqp.testinfra.rabbitmq;

import java.nio.file.Path;

/** What the tests can do to a RabbitMQ besides talking AMQP to it; one implementation per {@link RabbitMq.Source}. */
interface BrokerControl extends AutoCloseable {

    /** Stops the broker and starts it again on the same port with the same data; returns once it accepts clients. */
    void restart();

    /** @return the broker's own log file, or null where the tests cannot read it */
    Path logFile();

    /** Stops what the tests started (nothing for a broker they were given). Idempotent. */
    @Override
    void close();
}

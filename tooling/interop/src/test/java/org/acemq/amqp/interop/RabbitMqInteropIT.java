package org.acemq.amqp.interop;

/**
 * The interoperability scenarios on RabbitMQ (see {@link org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider} for where
 * it comes from): durable classic queues declared beforehand, dead-lettering by policy.
 */
class RabbitMqInteropIT extends InteropScenarios {

    @Override
    InteropBroker broker() {
        return Brokers.rabbitMq();
    }
}

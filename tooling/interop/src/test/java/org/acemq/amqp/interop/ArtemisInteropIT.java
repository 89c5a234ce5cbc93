package org.acemq.amqp.interop;

/**
 * The interoperability scenarios on embedded Artemis as the project's tests configure it: auto-created ANYCAST
 * addresses and queues, a dead-letter queue per queue.
 */
class ArtemisInteropIT extends InteropScenarios {

    @Override
    InteropBroker broker() {
        return Brokers.artemis();
    }
}

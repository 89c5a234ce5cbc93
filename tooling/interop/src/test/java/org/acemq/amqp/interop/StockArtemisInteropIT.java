package org.acemq.amqp.interop;

/**
 * The interoperability scenarios on embedded Artemis with Artemis' default address settings: auto-created addresses
 * are MULTICAST, auto-created queues are auto-deleted, no dead-letter address.
 */
class StockArtemisInteropIT extends InteropScenarios {

    @Override
    InteropBroker broker() {
        return Brokers.stockArtemis();
    }
}

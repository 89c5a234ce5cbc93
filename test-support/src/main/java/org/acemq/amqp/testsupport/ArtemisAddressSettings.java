package org.acemq.amqp.testsupport;

import org.apache.activemq.artemis.core.config.Configuration;

/**
 * Which address settings an {@link EmbeddedArtemis} runs with.
 *
 * <p>{@link #TEST_DEFAULTS} is what the project's tests were written against. {@link #STOCK} is what a newcomer meets
 * on a broker nobody has configured, so that tests can show how a consumer behaves there.
 */
public enum ArtemisAddressSettings {

    /**
     * The test configuration described in {@link EmbeddedArtemis}: auto-created addresses and queues are ANYCAST and
     * never auto-deleted, {@code maxDeliveryAttempts} and {@code redeliveryDelay} as built, dead letters go to
     * {@code DLQ.<queue>} on the address {@code DLQ}.
     */
    TEST_DEFAULTS,

    /**
     * No address settings at all: Artemis' built-in defaults (2.55). Auto-created addresses are MULTICAST, so a
     * message sent to an address without a bound queue is dropped, and a receiver that does not ask for a queue gets
     * a temporary subscription queue that dies with its link. Auto-created queues and addresses are auto-deleted once
     * they have no consumer and no message (the broker checks every {@code address-queue-scan-period}, 30 s by
     * default). No dead-letter address: a message rejected or past max-delivery-attempts (10) is dropped with a
     * warning. Redelivery delay 0.
     */
    STOCK;

    /** Applied after the test configuration has been added to {@code configuration}. */
    void applyTo(Configuration configuration) {
        if (this == STOCK) {
            configuration.clearAddressSettings();
        }
    }
}

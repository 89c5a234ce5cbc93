package org.acemq.amqp.spring;

import org.acemq.amqp.consumer.AmqpConsumer;

/**
 * Adjusts the {@link AmqpConsumer.Builder} after the starter has applied the {@code acemq.*} properties, the store,
 * the listeners and the Micrometer observer, just before the consumer starts: for settings that properties cannot
 * express (an {@code SSLContext} built in code, another {@code ConsumerObserver}, ...). Declare beans of this type;
 * they run in {@link org.springframework.core.annotation.Order @Order}. With several connections
 * ({@code acemq.connections.<name>.*}) there is one consumer per connection in use, and every customizer sees each of
 * their builders; override {@link #customize(String, AmqpConsumer.Builder)} to tell them apart.
 */
@FunctionalInterface
public interface AcemqConsumerCustomizer {

    /**
     * @param builder the builder, with everything the starter configured already set
     */
    void customize(AmqpConsumer.Builder builder);

    /**
     * Called by the container for the consumer of each connection in use; by default {@link #customize(
     * AmqpConsumer.Builder)}.
     *
     * @param connection the connection's name: {@code default} ({@code acemq.connection.*}) or a name of
     *     {@code acemq.connections}
     * @param builder the builder, with everything the starter configured already set
     */
    default void customize(String connection, AmqpConsumer.Builder builder) {
        customize(builder);
    }
}

package org.acemq.amqp.spring;

import org.acemq.amqp.consumer.AmqpConsumer;

/**
 * Adjusts the {@link AmqpConsumer.Builder} after the starter has applied the {@code acemq.*} properties, the store,
 * the listeners and the Micrometer observer, just before the consumer starts: for settings that properties cannot
 * express (an {@code SSLContext} built in code, another {@code ConsumerObserver}, ...). Declare beans of this type;
 * they run in {@link org.springframework.core.annotation.Order @Order}.
 */
@FunctionalInterface
public interface AcemqConsumerCustomizer {

    /**
     * @param builder the builder, with everything the starter configured already set
     */
    void customize(AmqpConsumer.Builder builder);
}

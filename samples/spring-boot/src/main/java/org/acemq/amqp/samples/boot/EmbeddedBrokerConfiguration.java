package org.acemq.amqp.samples.boot;

import java.time.Duration;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.spring.AcemqConsumerCustomizer;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * With {@code demo.embedded-broker=true} (the default): an ActiveMQ Artemis broker in this JVM on a free port, and
 * the consumer pointed at it. The broker's own max-delivery-attempts is off so that the consumer's
 * {@code maxAttempts} decides what is poison; rejected messages go to {@code DLQ.<queue>}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "demo.embedded-broker", havingValue = "true", matchIfMissing = true)
class EmbeddedBrokerConfiguration {

    @Bean(destroyMethod = "close")
    EmbeddedArtemis embeddedArtemis() {
        return EmbeddedArtemis.builder().persistent(false).maxDeliveryAttempts(-1).redeliveryDelay(Duration.ZERO)
                .build().start();
    }

    /** The broker's port is only known once it runs, so it is set here rather than in acemq.connection.port. */
    @Bean
    AcemqConsumerCustomizer embeddedBrokerConnection(EmbeddedArtemis broker) {
        return builder -> builder.connection(ConnectionSettings.builder(broker.host(), broker.port()).build());
    }
}

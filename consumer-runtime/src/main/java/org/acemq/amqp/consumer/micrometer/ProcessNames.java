package org.acemq.amqp.consumer.micrometer;

import java.util.Locale;

/**
 * The names the process observation is recorded under. The observer, the context and the default convention all read
 * them here (the public constants {@code MicrometerObserver.OBSERVATION_NAME} and
 * {@code DefaultAcemqProcessObservationConvention.MESSAGING_SYSTEM_AMQP} are these values), so none of them depends on
 * another for a name and the package has no dependency cycle.
 */
final class ProcessNames {

    /** The Observation's name, and the name of the timer a meter observation handler makes from it. */
    static final String OBSERVATION_NAME = "acemq.consumer.process";

    /** {@code messaging.system} for a broker the conventions have no value for, or one that announced no product. */
    static final String MESSAGING_SYSTEM_AMQP = "amqp";

    private ProcessNames() {
    }

    /**
     * The OpenTelemetry {@code messaging.system} for a broker: {@code activemq} for Apache ActiveMQ (Artemis or
     * Classic), {@code rabbitmq} for RabbitMQ, {@code servicebus} / {@code eventhubs} for Azure Service Bus / Event
     * Hubs, and {@value #MESSAGING_SYSTEM_AMQP} for any other broker or one that announced no product.
     *
     * @param brokerProduct the product the broker announced, or null
     * @return the value
     */
    static String messagingSystem(String brokerProduct) {
        if (brokerProduct == null) {
            return MESSAGING_SYSTEM_AMQP;
        }
        String p = brokerProduct.toLowerCase(Locale.ROOT);
        if (p.contains("activemq") || p.contains("artemis")) {
            return "activemq";
        } else if (p.contains("rabbitmq")) {
            return "rabbitmq";
        } else if (p.contains("servicebus") || p.contains("service bus")) {
            return "servicebus";
        } else if (p.contains("eventhub")) {
            return "eventhubs";
        }
        return MESSAGING_SYSTEM_AMQP;
    }
}

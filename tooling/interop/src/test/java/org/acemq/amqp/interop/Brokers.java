package org.acemq.amqp.interop;

import org.acemq.amqp.testinfra.Once;
import java.util.List;
import org.acemq.amqp.testinfra.rabbitmq.RabbitMqProvider;
import org.acemq.amqp.testsupport.ArtemisAddressSettings;

/**
 * The brokers of the suite, one of each per JVM, started on first use and shared by every test class (the idle-minute
 * test uses all three at once). The Artemis brokers are stopped by a shutdown hook; RabbitMQ by its provider's.
 * A broker that cannot be had fails every test that asks for it, with the reason.
 */
final class Brokers {

    /** The names, in the order {@link #all()} lists them. */
    static final List<String> NAMES = List.of("artemis", "artemis-stock", "rabbitmq");

    private static final Once<InteropBroker> ARTEMIS = new Once<>(() -> artemis(ArtemisAddressSettings.TEST_DEFAULTS));
    private static final Once<InteropBroker> STOCK_ARTEMIS = new Once<>(() -> artemis(ArtemisAddressSettings.STOCK));
    private static final Once<InteropBroker> RABBITMQ =
            new Once<>(() -> new RabbitMqUnderTest(RabbitMqProvider.shared()));

    private Brokers() {
    }

    /** @return embedded Artemis as the project's tests configure it */
    static InteropBroker artemis() {
        return ARTEMIS.get();
    }

    /** @return embedded Artemis with Artemis' default address settings */
    static InteropBroker stockArtemis() {
        return STOCK_ARTEMIS.get();
    }

    /** @return the RabbitMQ the provider found or started */
    static InteropBroker rabbitMq() {
        return RABBITMQ.get();
    }

    /** @return the broker of this name ({@link #NAMES}) */
    static InteropBroker byName(String name) {
        return switch (name) {
            case "artemis" -> artemis();
            case "artemis-stock" -> stockArtemis();
            case "rabbitmq" -> rabbitMq();
            default -> throw new IllegalArgumentException("no broker named '" + name + "'");
        };
    }

    private static InteropBroker artemis(ArtemisAddressSettings settings) {
        ArtemisUnderTest broker = ArtemisUnderTest.start(settings);
        Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "acemq-interop-" + broker.name() + "-stop"));
        return broker;
    }
}

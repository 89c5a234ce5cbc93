package org.acemq.amqp.spring.internal;

import java.time.Duration;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/**
 * One embedded Artemis broker for every integration test class of this module (failsafe runs them in one JVM, one
 * class at a time). It requires credentials, so that tests can check that none leaks into health or logs.
 */
final class SharedBroker {

    static final String USER = "acemq-it";
    static final String PASSWORD = "s3cret-pw";

    private static EmbeddedArtemis broker;

    private SharedBroker() {
    }

    static synchronized EmbeddedArtemis get() {
        if (broker == null) {
            EmbeddedArtemis b = EmbeddedArtemis.builder().persistent(false).maxDeliveryAttempts(-1)
                    .redeliveryDelay(Duration.ZERO).requireCredentials(USER, PASSWORD).build().start();
            Runtime.getRuntime().addShutdownHook(new Thread(b::close, "stop-shared-artemis"));
            broker = b;
        }
        return broker;
    }

    /** @return the acemq.connection.* properties for the broker */
    static String[] connectionProperties() {
        EmbeddedArtemis b = get();
        return new String[] {"acemq.connection.host=" + b.host(), "acemq.connection.port=" + b.port(),
            "acemq.connection.username=" + USER, "acemq.connection.password=" + PASSWORD};
    }
}

package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the runtime believes a broker implements, from its open frame and from what it did. */
class BrokerProfileTest {

    @Test
    void rabbitMq3HasNeitherModifiedNorSpecDrainsNorTransactions() {
        BrokerProfile p = BrokerProfile.of(Map.of("product", "RabbitMQ", "version", "3.10.8"));
        assertThat(p.modifiedSupported()).isFalse();
        assertThat(p.drainPerSpec()).isFalse();
        assertThat(p.transactions()).isFalse();
        assertThat(p).hasToString("RabbitMQ 3.10.8");
    }

    @Test
    void rabbitMq4ImplementsModifiedAndDrainsButNoTransactions() {
        BrokerProfile p = BrokerProfile.of(Map.of("product", "RabbitMQ", "version", "4.1.0"));
        assertThat(p.modifiedSupported()).isTrue();
        assertThat(p.drainPerSpec()).isTrue();
        assertThat(p.transactions()).isFalse();
    }

    @Test
    void artemisAndUnknownBrokersGetTheSpec() {
        for (BrokerProfile p : new BrokerProfile[] {
            BrokerProfile.of(Map.of("product", "apache-activemq-artemis", "version", "2.55.0")),
            BrokerProfile.of(Map.of()), BrokerProfile.of(null), BrokerProfile.unknown()}) {
            assertThat(p.modifiedSupported()).isTrue();
            assertThat(p.drainPerSpec()).isTrue();
            assertThat(p.transactions()).isTrue();
        }
    }

    @Test
    void aRefusedModifiedAndADrainAnsweredAgainstTheSpecAreRemembered() {
        BrokerProfile p = BrokerProfile.unknown();
        assertThat(BrokerProfile.refusesModified("amqp:invalid-field",
                "Unrecognised state: {'v1_0.modified',true,undefined,undefined}")).isTrue();
        assertThat(BrokerProfile.refusesModified("amqp:internal-error", "boom")).isFalse();
        p.modifiedRefused("test");
        assertThat(p.modifiedSupported()).isFalse();
        assertThat(p.drainAnsweredAgainstSpec(new RuntimeException("io",
                new IllegalArgumentException("Receiver read flow with drain set but credit was not zero")))).isTrue();
        assertThat(p.drainPerSpec()).isFalse();
        assertThat(p.drainAnsweredAgainstSpec(new RuntimeException("other"))).isFalse();
    }

    @Test
    void onRabbitMq3OnlyAddressesTheBrokerMakesNonDurableAreRisky() {
        BrokerProfile rabbit3 = BrokerProfile.of(Map.of("product", "RabbitMQ", "version", "3.10.8"));
        assertThat(rabbit3.addressRisk("/queue/orders")).contains("non-durable").contains("'/amq/queue/orders'")
                .contains("RabbitMQ 3.10.8");
        assertThat(rabbit3.addressRisk("/exchange/events/key")).contains("exclusive queue").contains("/amq/queue/");
        assertThat(rabbit3.addressRisk("/topic/orders.*")).contains("exclusive queue");
        assertThat(rabbit3.addressRisk("/amq/queue/orders")).isNull();
        assertThat(rabbit3.addressRisk("orders")).isNull();
        assertThat(BrokerProfile.of(Map.of("product", "RabbitMQ", "version", "4.1.0")).addressRisk("/queue/orders"))
                .as("RabbitMQ 4's address format does not declare queues").isNull();
        assertThat(BrokerProfile.of(Map.of("product", "apache-activemq-artemis", "version", "2.55.0"))
                .addressRisk("/queue/orders")).isNull();
        assertThat(BrokerProfile.unknown().addressRisk("/queue/orders")).isNull();
    }
}

package org.acemq.amqp.consumer.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.junit.jupiter.api.Test;

/** The observer callbacks on their own: tags, common tags, registration on first use. */
class MicrometerObserverTest {

    @Test
    void callbacksFeedTheDeclaredMetersWithCommonTags() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver observer = MicrometerObserver.builder(registry)
                .commonTags(Tags.of("consumer", "billing")).build();

        observer.settled("orders", Outcome.REJECTED, SettleReason.POISON);
        observer.settled("orders", Outcome.REJECTED, SettleReason.POISON);
        observer.settled("orders", Outcome.ACCEPTED, SettleReason.PROCESSED);
        observer.settled("orders", Outcome.RELEASED, SettleReason.BEYOND_CREDIT);
        observer.claim("orders", ClaimResult.IN_PROGRESS);
        observer.claimFailed("orders");
        observer.handled("orders", 5_000_000, false);
        observer.storeCall(StoreOperation.RENEW, 1_000, false);
        observer.storeBypassed("orders");
        observer.abandoned("orders");
        observer.dispositionDropped("orders");
        observer.dispositionDropped("orders");
        observer.connectionInterrupted(true);
        observer.connectionInterrupted(false);

        assertThat(registry.get("acemq.consumer.deliveries").tags("consumer", "billing", "subscription", "orders",
                "outcome", "rejected", "reason", "poison").counter().count()).isEqualTo(2);
        assertThat(registry.get("acemq.consumer.poison").tags("consumer", "billing").counter().count()).isEqualTo(2);
        assertThat(registry.get("acemq.consumer.beyond.credit").tags("subscription", "orders").counter().count())
                .isEqualTo(1);
        assertThat(registry.get("acemq.consumer.deliveries").tags("outcome", "released", "reason", "beyond_credit")
                .counter().count()).isEqualTo(1);
        assertThat(registry.get("acemq.consumer.claims").tags("result", "in_progress").counter().count())
                .isEqualTo(1);
        assertThat(registry.get("acemq.consumer.claims").tags("result", "error").counter().count()).isEqualTo(1);
        assertThat(registry.get("acemq.consumer.claims").counters()).hasSize(4); // all results, from the start
        assertThat(registry.get("acemq.consumer.handler.duration").tags("result", "failure").timer()
                .totalTime(TimeUnit.MILLISECONDS)).isEqualTo(5);
        assertThat(registry.get("acemq.store.errors").tags("operation", "renew").counter().count()).isEqualTo(1);
        assertThat(registry.get("acemq.store.errors").counters()).hasSize(StoreOperation.values().length);
        assertThat(registry.get("acemq.consumer.store.bypassed").counter().count()).isEqualTo(1);
        assertThat(registry.get("acemq.consumer.abandoned").counter().count()).isEqualTo(1);
        assertThat(registry.get("acemq.consumer.dispositions.dropped").tags("subscription", "orders").counter()
                .count()).isEqualTo(2);
        assertThat(registry.get("acemq.consumer.connection.interruptions").counter().count()).isEqualTo(1);
        // only the (outcome, reason) pairs that occurred exist
        assertThat(registry.get("acemq.consumer.deliveries").counters()).hasSize(3);
        // every meter carries the common tag
        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getTag("consumer")).isEqualTo("billing"));
        // every registered name is declared
        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(
                java.util.Arrays.stream(AcemqMeter.values()).map(AcemqMeter::meterName))
                .contains(m.getId().getName()));
    }

    @Test
    void storeCallsRecordHowManyKeysEachCovered() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver observer = MicrometerObserver.of(registry);

        observer.storeCall(StoreOperation.CLAIM, 4_000_000, true, 12);
        observer.storeCall(StoreOperation.CLAIM, 1_000_000, true, 1);
        observer.storeCall(StoreOperation.RELEASE, 2_000_000, false, 3);
        observer.storeCall(StoreOperation.PROBE, 1_000, true); // the old callback: one key

        var claims = registry.get("acemq.store.operation.keys").tags("operation", "claim").summary();
        assertThat(claims.count()).isEqualTo(2);
        assertThat(claims.totalAmount()).isEqualTo(13);
        assertThat(claims.max()).isEqualTo(12);
        assertThat(registry.get("acemq.store.operation.duration").tags("operation", "claim", "result", "success")
                .timer().totalTime(TimeUnit.MILLISECONDS)).as("5 ms for 13 messages").isEqualTo(5);
        var releases = registry.get("acemq.store.operation.keys").tags("operation", "release").summary();
        assertThat(releases.totalAmount()).as("failed calls count their keys too").isEqualTo(3);
        assertThat(registry.get("acemq.store.errors").tags("operation", "release").counter().count()).isEqualTo(1);
        assertThat(registry.get("acemq.store.operation.keys").tags("operation", "probe").summary().totalAmount())
                .isEqualTo(1);
        assertThat(registry.get("acemq.store.operation.keys").summaries()).hasSize(StoreOperation.values().length);
    }

    @Test
    void theMessagingSystemFollowsTheBrokersProductWithAmqpForTheRest() {
        assertThat(AcemqProcessContext.messagingSystem("apache-activemq-artemis")).isEqualTo("activemq");
        assertThat(AcemqProcessContext.messagingSystem("ActiveMQ")).isEqualTo("activemq");
        assertThat(AcemqProcessContext.messagingSystem("RabbitMQ")).isEqualTo("rabbitmq");
        assertThat(AcemqProcessContext.messagingSystem("MSServiceBus")).isEqualTo("servicebus");
        assertThat(AcemqProcessContext.messagingSystem("Solace PubSub+")).isEqualTo("amqp");
        assertThat(AcemqProcessContext.messagingSystem(null))
                .isEqualTo(DefaultAcemqProcessObservationConvention.MESSAGING_SYSTEM_AMQP).isEqualTo("amqp");
    }
}

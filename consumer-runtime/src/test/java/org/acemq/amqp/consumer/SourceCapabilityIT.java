package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A consumer on a stock Artemis, whose auto-created addresses are MULTICAST (addresses under {@code stock.} get
 * Artemis' own defaults here). By default the receiver asks for a {@code queue}: it owns a durable anycast queue, so
 * what is published while it is down waits for it. An address that exists as multicast only is refused with a clear
 * error and an unhealthy consumer, instead of a temporary subscription queue that consumes nothing.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class SourceCapabilityIT {

    private static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = E2e.broker(true);
        broker.server().getAddressSettingsRepository().addMatch("stock.#", new AddressSettings()
                .setAutoCreateAddresses(true).setAutoCreateQueues(true)
                .setDefaultAddressRoutingType(RoutingType.MULTICAST)
                .setDefaultQueueRoutingType(RoutingType.MULTICAST));
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    private static AmqpConsumer start(String address, E2e.Effects effects) {
        return E2e.consumer(broker, "stock").store(STORE)
                .subscribe(Subscription.builder(address, e -> effects.record(e.id())).concurrency(2).build())
                .start();
    }

    private static final InMemoryIdempotencyStore STORE = InMemoryIdempotencyStore.ofDefaults();

    @Test
    void aConsumerRestartLosesNothingPublishedWhileItWasDown() {
        String address = "stock.orders";
        E2e.Effects effects = new E2e.Effects();
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            try (AmqpConsumer consumer = start(address, effects)) {
                await().until(() -> consumer.health().healthy() && broker.consumerCount(address) == 1);
                client.sendBatch(address, 250, i -> "first-" + i);
                await().until(() -> effects.total() == 250);
            }
            assertThat(broker.queueExists(address)).as("the queue outlives its consumer").isTrue();
            client.sendBatch(address, 250, i -> "second-" + i);
            await().until(() -> broker.messageCount(address) == 250);
            try (AmqpConsumer consumer = start(address, effects)) {
                await().atMost(Duration.ofSeconds(30)).until(() -> effects.total() == 500);
                await().until(() -> broker.messageCount(address) == 0);
            }
        }
        assertThat(effects.ids()).hasSize(500);
        assertThat(effects.repeated()).isEmpty();
    }

    @Test
    void anAddressThatExistsAsMulticastOnlyIsRefusedClearlyAndTheConsumerIsUnhealthy() {
        String address = "stock.events";
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.sendBatch(address, 1, i -> "lost-" + i); // auto-creates a multicast address, no queue
        }
        try (AmqpConsumer consumer = start(address, new E2e.Effects())) {
            await().atMost(Duration.ofSeconds(20)).until(() -> consumer.health().lastError() != null
                    && consumer.health().lastError().contains("not configured for queue support"));
            assertThat(consumer.health().healthy()).isFalse();
            assertThat(consumer.health().subscriptions().get(0).attached()).isFalse();
            assertThat(consumer.health().lastError()).contains(address);
        }
    }
}

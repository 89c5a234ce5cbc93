package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.core.server.impl.AddressInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Duplicates across scopes, on embedded Artemis with the in-memory store and the default key settings: the topologies in
 * which one event reaches several endpoints. Every handler runs once per event, and copies re-sent to an endpoint are
 * still absorbed there (each endpoint has a scope of its own; competing consumers of one queue share theirs).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DuplicateScopeIT extends ArtemisTestBase {

    private static final int EVENTS = 100;

    /** A MULTICAST address with a durable MULTICAST subscription queue per name, as an operator declares them. */
    static void multicast(String address, String... queues) throws Exception {
        broker.server().addAddressInfo(new AddressInfo(SimpleString.of(address)).addRoutingType(RoutingType.MULTICAST));
        for (String queue : queues) {
            broker.server().createQueue(QueueConfiguration.of(queue).setAddress(address)
                    .setRoutingType(RoutingType.MULTICAST).setDurable(true));
        }
    }

    private static int bindings(String address) throws Exception {
        return broker.server().getPostOffice().getBindingsForAddress(SimpleString.of(address)).getBindings().size();
    }

    private static String messageId(org.acemq.amqp.api.Envelope e) {
        return String.valueOf(e.messageId());
    }

    @Test
    void oneConsumerOnTwoSubscriptionQueuesOfAMulticastAddressRunsEachHandlerOncePerEvent() throws Exception {
        multicast("events", "billing", "audit");
        E2e.Effects billing = new E2e.Effects();
        E2e.Effects audit = new E2e.Effects();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = E2e.consumer(broker, "fan-out").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(Subscription.builder("events::billing", e -> billing.record(messageId(e)))
                        .name("billing").build())
                .subscribe(Subscription.builder("events::audit", e -> audit.record(messageId(e)))
                        .name("audit").build())
                .start()) {
            await().until(() -> consumer.health().healthy()
                    && broker.consumerCount("billing") == 1 && broker.consumerCount("audit") == 1);

            client.sendBatch("events", EVENTS, i -> "event-" + i, i -> "payload-" + i);
            await().until(() -> observer.count("billing", Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS
                    && observer.count("audit", Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS);

            // the publisher sends every event again: each queue gets a copy, and each absorbs its own
            client.sendBatch("events", EVENTS, i -> "event-" + i, i -> "payload-" + i);
            await().until(() -> observer.count("billing", Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS
                    && observer.count("audit", Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);

            // copies re-sent to one subscription queue only (its fully qualified name), e.g. an operator's re-drive
            client.sendBatch("events::audit", 10, i -> "event-" + i, i -> "payload-" + i);
            await().until(() -> observer.count("audit", Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS + 10);
            await().until(() -> broker.messageCount("billing") == 0 && broker.messageCount("audit") == 0);
        }
        assertThat(billing.total()).as("billing handler runs").isEqualTo(EVENTS);
        assertThat(audit.total()).as("audit handler runs").isEqualTo(EVENTS);
        assertThat(billing.repeated()).isEmpty();
        assertThat(audit.repeated()).isEmpty();
        assertThat(observer.count("billing", Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(EVENTS);
        assertThat(observer.settlements()).allSatisfy(s -> assertThat(s.reason())
                .isIn(SettleReason.PROCESSED, SettleReason.DUPLICATE));
        assertThat(observer.conflicts()).isEmpty();
        // each queue has a scope of its own: the same event has one key per queue
        assertThat(observer.settlements()).filteredOn(s -> s.subscription().equals("billing"))
                .allSatisfy(s -> assertThat(s.key()).startsWith("events::billing|"));
        assertThat(observer.settlements()).filteredOn(s -> s.subscription().equals("audit"))
                .allSatisfy(s -> assertThat(s.key()).startsWith("events::audit|"));
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName("billing"))).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName("audit"))).isZero();
    }

    @Test
    void twoConsumersSubscribingToOneTopicAddressEachRunOncePerEvent() throws Exception {
        multicast("news");
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        E2e.Effects a = new E2e.Effects();
        E2e.Effects b = new E2e.Effects();
        RecordingObserver observerA = new RecordingObserver();
        RecordingObserver observerB = new RecordingObserver();
        try (AmqpConsumer serviceA = E2e.consumer(broker, "service-a").store(store).observer(observerA)
                .subscribe(Subscription.builder("news", e -> a.record(messageId(e)))
                        .sourceCapability(SourceCapability.TOPIC).build())
                .start();
             AmqpConsumer serviceB = E2e.consumer(broker, "service-b").store(store).observer(observerB)
                     .subscribe(Subscription.builder("news", e -> b.record(messageId(e)))
                             .sourceCapability(SourceCapability.TOPIC).build())
                     .start()) {
            // each link has its own subscription queue on the address
            await().until(() -> serviceA.health().healthy() && serviceB.health().healthy() && bindings("news") == 2);

            client.sendBatch("news", EVENTS, i -> "news-" + i, i -> "story-" + i);
            await().until(() -> observerA.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS
                    && observerB.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS);
            client.sendBatch("news", EVENTS, i -> "news-" + i, i -> "story-" + i);
            await().until(() -> observerA.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS
                    && observerB.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);
        }
        assertThat(a.total()).as("service A handler runs").isEqualTo(EVENTS);
        assertThat(b.total()).as("service B handler runs").isEqualTo(EVENTS);
        assertThat(a.repeated()).isEmpty();
        assertThat(b.repeated()).isEmpty();
        String keyA = observerA.settlements().get(0).key();
        String keyB = observerB.settlements().get(0).key();
        String scopeA = keyA.substring(0, keyA.indexOf('|'));
        String scopeB = keyB.substring(0, keyB.indexOf('|'));
        assertThat(scopeA).startsWith("news#").isNotEqualTo(scopeB);
        assertThat(scopeB).startsWith("news#");
    }

    @Test
    void twoServicesOnTheirOwnQueuesSharingOneStoreEachRunOncePerEvent() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        E2e.Effects shipping = new E2e.Effects();
        E2e.Effects invoicing = new E2e.Effects();
        RecordingObserver observerS = new RecordingObserver();
        RecordingObserver observerI = new RecordingObserver();
        try (AmqpConsumer shippingService = E2e.consumer(broker, "shipping").store(store).observer(observerS)
                .subscribe(Subscription.builder("shipping.orders", e -> shipping.record(messageId(e))).build())
                .start();
             AmqpConsumer invoicingService = E2e.consumer(broker, "invoicing").store(store).observer(observerI)
                     .subscribe(Subscription.builder("invoicing.orders", e -> invoicing.record(messageId(e))).build())
                     .start()) {
            // the same events (same message-ids) reach both services' queues
            client.sendBatch("shipping.orders", EVENTS, i -> "order-" + i, i -> "order body " + i);
            client.sendBatch("invoicing.orders", EVENTS, i -> "order-" + i, i -> "order body " + i);
            await().until(() -> observerS.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS
                    && observerI.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS);

            // copies re-sent to one of them are absorbed there
            client.sendBatch("invoicing.orders", EVENTS, i -> "order-" + i, i -> "order body " + i);
            await().until(() -> observerI.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);
            await().until(() -> broker.messageCount("shipping.orders") == 0
                    && broker.messageCount("invoicing.orders") == 0);
            assertThat(shippingService.health().healthy()).isTrue();
            assertThat(invoicingService.health().healthy()).isTrue();
        }
        assertThat(shipping.total()).as("shipping handler runs").isEqualTo(EVENTS);
        assertThat(invoicing.total()).as("invoicing handler runs").isEqualTo(EVENTS);
        assertThat(shipping.repeated()).isEmpty();
        assertThat(invoicing.repeated()).isEmpty();
        assertThat(observerS.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isZero();
        assertThat(store.isConfirmed("shipping.orders|s:order-0")).isTrue();
        assertThat(store.isConfirmed("invoicing.orders|s:order-0")).isTrue();
    }

    @Test
    void competingConsumersOfOneQueueUnderDifferentNamesShareTheScope() {
        String q = "work";
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        E2e.Effects effects = new E2e.Effects();
        RecordingObserver observer1 = new RecordingObserver();
        RecordingObserver observer2 = new RecordingObserver();

        // instance 1 alone handles the events
        try (AmqpConsumer instance1 = instance(store, "worker-1", effects, observer1)) {
            client.sendBatch(q, EVENTS, i -> "job-" + i, i -> "job body " + i);
            await().until(() -> observer1.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS);
            assertThat(instance1.health().healthy()).isTrue();
        }
        // instance 2 (another subscription name, another link name, its own peer of the store) gets the copies
        try (AmqpConsumer instance2 = instance(store.newPeer(), "worker-2", effects, observer2)) {
            client.sendBatch(q, EVENTS, i -> "job-" + i, i -> "job body " + i);
            await().until(() -> observer2.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);
            assertThat(instance2.health().healthy()).isTrue();
        }
        assertThat(effects.total()).isEqualTo(EVENTS);

        // both at once, fresh events each sent twice: the copies go to either instance and are absorbed there
        RecordingObserver both1 = new RecordingObserver();
        RecordingObserver both2 = new RecordingObserver();
        try (AmqpConsumer instance1 = instance(store, "worker-1", effects, both1);
             AmqpConsumer instance2 = instance(store.newPeer(), "worker-2", effects, both2)) {
            await().until(() -> broker.consumerCount(q) == 2);
            for (int round = 0; round < 2; round++) {
                client.sendBatch(q, EVENTS, i -> "second-job-" + i, i -> "second job body " + i);
            }
            await().until(() -> both1.count(Outcome.ACCEPTED, SettleReason.PROCESSED)
                    + both2.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == EVENTS
                    && both1.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)
                    + both2.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == EVENTS);
            await().until(() -> broker.messageCount(q) == 0);
        }
        assertThat(effects.total()).as("handler runs, both instances").isEqualTo(2 * EVENTS);
        assertThat(effects.repeated()).isEmpty();
        for (RecordingObserver o : java.util.List.of(observer1, observer2, both1, both2)) {
            assertThat(o.settlements()).allSatisfy(s -> assertThat(s.key()).startsWith(q + "|"));
            assertThat(o.conflicts()).isEmpty();
        }
    }

    private static AmqpConsumer instance(InMemoryIdempotencyStore store, String name, E2e.Effects effects,
                                         RecordingObserver observer) {
        return E2e.consumer(broker, name).store(store).observer(observer)
                .subscribe(Subscription.builder("work", e -> effects.record(messageId(e)))
                        .name(name).linkName(name + "-link").concurrency(2)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start();
    }
}

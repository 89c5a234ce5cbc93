package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * What counts as a duplicate, through the starter on an embedded Artemis: business keys from a SpEL expression and
 * from an application property, the default scope per queue, an explicit shared scope, the scope prefix, and
 * conflicting copies (same key, other body) with the settings in attributes and in properties.
 */
@Timeout(180)
class ListenerKeysIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    static ConfigurableApplicationContext start(Class<?> app, String... properties) {
        return AcemqListenerIT.start(app, properties);
    }

    record Order(String orderId, String item) {
    }

    /** Counts the runs of each listener per order id, and records the store keys the runtime handed them. */
    static class Runs {
        final Map<String, Map<String, AtomicInteger>> byListener = new ConcurrentHashMap<>();
        final Queue<String> keys = new ConcurrentLinkedQueue<>();

        void ran(String listener, String order, Envelope envelope) {
            byListener.computeIfAbsent(listener, k -> new ConcurrentHashMap<>())
                    .computeIfAbsent(order, k -> new AtomicInteger()).incrementAndGet();
            keys.add(listener + " " + envelope.id());
        }

        Map<String, AtomicInteger> of(String listener) {
            return byListener.getOrDefault(listener, Map.of());
        }

        int total(String listener) {
            return of(listener).values().stream().mapToInt(AtomicInteger::get).sum();
        }
    }

    static double count(MeterRegistry registry, String subscription, String outcome, String reason) {
        return AcemqListenerIT.count(registry, subscription, outcome, reason);
    }

    static AmqpTestClient.MessageSpec order(String messageId, String orderId, String item) {
        return AmqpTestClient.message(messageId, "{\"orderId\":\"" + orderId + "\",\"item\":\"" + item + "\"}")
                .property("orderId", orderId);
    }

    // ------------------------------------------------------------------------------------------- business keys

    static class KeyedOrders {
        final Runs runs = new Runs();

        @AcemqListener(name = "by-payload", address = "${test.by-payload}", key = "payload.orderId")
        void byPayload(Order order, Envelope envelope) {
            runs.ran("by-payload", order.orderId(), envelope);
        }

        @AcemqListener(name = "by-property", address = "${test.by-property}", keyProperty = "orderId")
        void byProperty(Order order, Envelope envelope) {
            runs.ran("by-property", order.orderId(), envelope);
        }

        @AcemqListener(name = "by-id", address = "${test.by-id}")
        void byMessageId(Order order, Envelope envelope) {
            runs.ran("by-id", order.orderId(), envelope);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(KeyedOrders.class)
    static class KeyedOrdersApp {
    }

    @Test
    void aPublisherRetryingWithANewMessageIdIsAbsorbedByABusinessKey() {
        String byPayload = "it-key-payload-" + UUID.randomUUID();
        String byProperty = "it-key-property-" + UUID.randomUUID();
        String byId = "it-key-id-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(KeyedOrdersApp.class, "test.by-payload=" + byPayload,
                "test.by-property=" + byProperty, "test.by-id=" + byId);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(KeyedOrders.class).runs;
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            for (int attempt = 0; attempt < 2; attempt++) {
                for (int i = 0; i < 5; i++) {
                    // every retry of an order gets a new message-id, as a publisher that re-sends after a timeout
                    for (String queue : List.of(byPayload, byProperty, byId)) {
                        client.send(queue, order(UUID.randomUUID().toString(), "o-" + i, "item-" + i));
                    }
                }
                await().atMost(Duration.ofSeconds(60)).until(() -> broker.messageCount(byPayload) == 0
                        && broker.messageCount(byProperty) == 0 && broker.messageCount(byId) == 0
                        && broker.deliveringCount(byPayload) == 0 && broker.deliveringCount(byProperty) == 0
                        && broker.deliveringCount(byId) == 0);
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(count(registry, "by-payload", "accepted", "duplicate")).isEqualTo(5);
                assertThat(count(registry, "by-property", "accepted", "duplicate")).isEqualTo(5);
                assertThat(runs.total("by-id")).as("keyed by message-id, every retry runs again").isEqualTo(10);
            });
            assertThat(runs.of("by-payload")).hasSize(5).allSatisfy((order, n) -> assertThat(n).hasValue(1));
            assertThat(runs.of("by-property")).hasSize(5).allSatisfy((order, n) -> assertThat(n).hasValue(1));
            assertThat(count(registry, "by-payload", "accepted", "processed")).isEqualTo(5);
            assertThat(runs.keys).as("the store keys: scope (the queue), then the typed key")
                    .contains("by-payload " + byPayload + "|k:s:o-3", "by-property " + byProperty
                            + "|p:orderId=s:o-3");
        }
    }

    @Test
    void aMessageWithoutItsKeyIsRejectedAsMissingAnId() {
        String byPayload = "it-key-missing-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(KeyedOrdersApp.class, "test.by-payload=" + byPayload,
                "test.by-property=unused-" + UUID.randomUUID(), "test.by-id=unused-" + UUID.randomUUID());
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(KeyedOrders.class).runs;
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            client.send(byPayload, AmqpTestClient.message("m-no-key", "{\"item\":\"no order id\"}"),
                    AmqpTestClient.message("m-not-json", "not json"), order("m-ok", "o-1", "apple"));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(runs.total("by-payload")).isEqualTo(1);
                assertThat(registry.find("acemq.consumer.deliveries").tags("subscription", "by-payload",
                        "outcome", "rejected").counters().stream().mapToDouble(c -> c.count()).sum())
                        .as("null key and unreadable payload: no key").isEqualTo(2.0);
            });
        }
    }

    // ------------------------------------------------------------------------------------------------- scopes

    static class FanOut {
        final Runs runs = new Runs();

        @AcemqListener(name = "billing", address = "${test.billing}", concurrency = "2")
        void billing(String body, Envelope envelope) {
            runs.ran("billing", body, envelope);
        }

        @AcemqListener(name = "audit", address = "${test.audit}", concurrency = "2")
        void audit(String body, Envelope envelope) {
            runs.ran("audit", body, envelope);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(FanOut.class)
    static class FanOutApp {
    }

    @Test
    void twoQueuesFedTheSameMessageIdsRunEachListenerOncePerMessage() {
        String billing = "it-fan-billing-" + UUID.randomUUID();
        String audit = "it-fan-audit-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(FanOutApp.class, "test.billing=" + billing,
                "test.audit=" + audit, "acemq.consumer.scope-prefix=svc");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(FanOut.class).runs;
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            for (int i = 0; i < 20; i++) {
                // what a multicast address with two queues does: one event, the same message-id, on both queues
                client.send(billing, AmqpTestClient.message("ev-" + i, "event-" + i));
                client.send(audit, AmqpTestClient.message("ev-" + i, "event-" + i));
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> runs.total("billing") == 20
                    && runs.total("audit") == 20);
            client.send(billing, AmqpTestClient.message("ev-1", "event-1"), AmqpTestClient.message("ev-2",
                    "event-2"));
            await().atMost(Duration.ofSeconds(60)).until(() ->
                    count(registry, "billing", "accepted", "duplicate") == 2);

            assertThat(runs.of("billing")).hasSize(20).allSatisfy((e, n) -> assertThat(n).hasValue(1));
            assertThat(runs.of("audit")).hasSize(20).allSatisfy((e, n) -> assertThat(n).hasValue(1));
            assertThat(count(registry, "audit", "accepted", "duplicate")).isZero();
            assertThat(runs.keys).as("default scope: the prefix and the queue").contains(
                    "billing svc/" + billing + "|s:ev-7", "audit svc/" + audit + "|s:ev-7");
        }
    }

    @Test
    void twoListenersGivenOneScopeAbsorbEachOthersCopies() {
        String billing = "it-shared-billing-" + UUID.randomUUID();
        String audit = "it-shared-audit-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(FanOutApp.class, "test.billing=" + billing,
                "test.audit=" + audit, "acemq.listeners.billing.scope=shared",
                "acemq.listeners.audit.scope=shared");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(FanOut.class).runs;
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            for (int i = 0; i < 20; i++) {
                client.send(billing, AmqpTestClient.message("ev-" + i, "event-" + i));
                client.send(audit, AmqpTestClient.message("ev-" + i, "event-" + i));
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> count(registry, "billing", "accepted", "processed")
                    + count(registry, "audit", "accepted", "processed") == 20
                    && count(registry, "billing", "accepted", "duplicate")
                    + count(registry, "audit", "accepted", "duplicate") == 20);
            assertThat(runs.total("billing") + runs.total("audit")).as("one run per event across both").isEqualTo(20);
            assertThat(runs.keys).allSatisfy(k -> assertThat(k).contains(" shared|s:ev-"));
        }
    }

    // ---------------------------------------------------------------------------------------------- conflicts

    static class Conflicts {
        final Runs runs = new Runs();

        @AcemqListener(name = "lenient", address = "${test.lenient}", key = "payload.orderId")
        void lenient(Order order, Envelope envelope) {
            runs.ran("lenient", order.orderId() + "/" + order.item(), envelope);
        }

        /** Accepts conflicts by its attribute; the test's properties turn that into reject. */
        @AcemqListener(name = "strict", address = "${test.strict}", key = "payload.orderId", onConflict = "accept")
        void strict(Order order, Envelope envelope) {
            runs.ran("strict", order.orderId() + "/" + order.item(), envelope);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Conflicts.class)
    static class ConflictsApp {
    }

    @Test
    void aCopyWithTheSameKeyAndAnotherBodyIsAConflictCountedOrRejected() {
        String lenient = "it-conflict-lenient-" + UUID.randomUUID();
        String strict = "it-conflict-strict-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(ConflictsApp.class, "test.lenient=" + lenient,
                "test.strict=" + strict, "acemq.listeners.strict.on-conflict=reject");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(Conflicts.class).runs;
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            for (String queue : List.of(lenient, strict)) {
                client.send(queue, order("m-1", "o-1", "apple"));
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> runs.total("lenient") == 1
                    && runs.total("strict") == 1);
            for (String queue : List.of(lenient, strict)) {
                // the same order again: a true copy (new id, same body), then one that differs
                client.send(queue, order("m-2", "o-1", "apple"), order("m-3", "o-1", "pear"));
            }
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(count(registry, "lenient", "accepted", "duplicate")).isEqualTo(1);
                assertThat(count(registry, "lenient", "accepted", "conflict")).isEqualTo(1);
                assertThat(count(registry, "strict", "accepted", "duplicate")).isEqualTo(1);
                assertThat(count(registry, "strict", "rejected", "conflict"))
                        .as("the property's on-conflict=reject wins over the attribute's accept").isEqualTo(1);
            });
            assertThat(count(registry, "strict", "accepted", "conflict")).isZero();
            assertThat(runs.of("lenient")).containsOnlyKeys("o-1/apple");
            assertThat(runs.of("strict")).containsOnlyKeys("o-1/apple");
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(lenient) == 0
                    && broker.messageCount(strict) == 0);
        }
    }
}

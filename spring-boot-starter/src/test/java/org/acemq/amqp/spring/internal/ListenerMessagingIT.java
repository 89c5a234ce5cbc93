package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Positive;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.spring.AcemqHeaders;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;

/**
 * Listener methods invoked through Spring Messaging, in a Boot application on the embedded Artemis: {@code @Payload}
 * records validated with Boot's {@code Validator}, {@code @Header}, {@code @Headers}, {@code Message<?>} and
 * {@code Envelope} parameters, String, byte[] and AMQP map bodies; what a payload that fails validation or a missing
 * header does (rejected, dead-lettered, counted); and a method whose parameters cannot be resolved failing the start.
 */
@Timeout(180)
class ListenerMessagingIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    // explicit messages: the assertions below must not depend on the JVM's default locale
    record Order(@NotBlank(message = "must not be blank") String id,
            @Positive(message = "must be greater than 0") int quantity) {
    }

    /** One listener per parameter style; each records what it received. */
    static class Listeners {
        final List<String> orders = new CopyOnWriteArrayList<>();
        final Map<String, Object> seen = new ConcurrentHashMap<>();

        @AcemqListener(address = "${test.queue}.orders")
        void onOrder(@Payload @Valid Order order, @Header("orderId") String orderId,
                @Header(AcemqHeaders.MESSAGE_ID) String messageId) {
            orders.add(messageId + " " + orderId + " " + order.id() + " x" + order.quantity());
        }

        @AcemqListener(address = "${test.queue}.headers")
        void onHeaders(String body, @Headers Map<String, Object> headers, Message<?> message, Envelope envelope,
                @Header(name = "missing", required = false) String missing) {
            seen.put("body", body);
            seen.put("headers", Map.copyOf(headers));
            seen.put("message", message);
            seen.put("envelope.id", envelope.id());
            seen.put("envelope.attempt", envelope.attempt());
            seen.put("missing", String.valueOf(missing));
        }

        @AcemqListener(address = "${test.queue}.bytes")
        void onBytes(byte[] body, @Header(AcemqHeaders.ATTEMPT) int attempt,
                @Header("count") long count) {
            seen.put("bytes", new String(body, StandardCharsets.UTF_8) + " attempt " + attempt + " count " + count);
        }

        @AcemqListener(address = "${test.queue}.map")
        void onMapOrder(@Valid Order order) {
            seen.put("map-order", order);
        }

        @AcemqListener(address = "${test.queue}.raw")
        void onRawMap(Map<String, Object> body) {
            seen.put("raw-map", body);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Listeners.class)
    static class MessagingApp {
        final List<RejectionHandler.Rejection> rejections = new CopyOnWriteArrayList<>();

        /** Records every rejection and lets it proceed (to the dead-letter queue). */
        @Bean
        RejectionHandler recordRejections() {
            return rejection -> {
                rejections.add(rejection);
                return RejectionHandler.Decision.REJECT;
            };
        }
    }

    static AmqpTestClient.MessageSpec order(String messageId, String id, int quantity) {
        return AmqpTestClient.message(messageId, "{\"id\":\"" + id + "\",\"quantity\":" + quantity + "}")
                .property("orderId", "order-" + id);
    }

    @Test
    void aValidatedPayloadRecordWithHeadersIsHandledAndAnInvalidOneIsRejectedAsSuch() {
        String queue = "it-messaging-" + UUID.randomUUID();
        String orders = queue + ".orders";
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(MessagingApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Listeners listeners = app.getBean(Listeners.class);
            MessagingApp messaging = app.getBean(MessagingApp.class);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            client.send(orders, order("m-1", "a", 2), order("m-2", "b", 0), order("m-3", "", 1),
                    AmqpTestClient.message("m-4", "{\"id\":\"d\",\"quantity\":1}"), order("m-5", "e", 5));

            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(AcemqListenerIT.count(registry, orders, "accepted", "processed")).isEqualTo(2);
                assertThat(AcemqListenerIT.count(registry, orders, "rejected", "permanent")).isEqualTo(3);
            });
            assertThat(listeners.orders).containsExactlyInAnyOrder("m-1 order-a a x2", "m-5 order-e e x5");
            assertThat(messaging.rejections).extracting(r -> r.envelope().orElseThrow().messageId() + " "
                    + r.reason() + " " + r.condition()).containsExactlyInAnyOrder(
                    "m-2 PERMANENT " + RejectionConditions.VALIDATION_FAILED,
                    "m-3 PERMANENT " + RejectionConditions.VALIDATION_FAILED,
                    "m-4 PERMANENT " + RejectionConditions.DECODE_ERROR);
            Map<Object, String> descriptions = new ConcurrentHashMap<>();
            messaging.rejections.forEach(r -> descriptions.put(r.envelope().orElseThrow().messageId(),
                    r.description().orElseThrow()));
            assertThat(descriptions.get("m-2")).isEqualTo("the Order payload of Listeners.onOrder is not valid: "
                    + "quantity: must be greater than 0");
            assertThat(descriptions.get("m-3")).isEqualTo("the Order payload of Listeners.onOrder is not valid: "
                    + "id: must not be blank");
            assertThat(descriptions.get("m-4")).contains("parameter 1 (java.lang.String) cannot be resolved")
                    .contains("orderId");
            assertThat(messaging.rejections).allSatisfy(r -> assertThat(r.failure()).isPresent());
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(broker.messageCount(orders)).isZero();
                assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(orders)))
                        .as("the three rejected messages, dead-lettered by the broker").isEqualTo(3);
            });
            assertThat(AcemqListenerIT.count(registry, orders, "modified", "failed")).as("never retried").isZero();
        }
    }

    @Test
    void headersMessageEnvelopeStringBytesAndMapBodiesReachTheirParameters() {
        String queue = "it-parameters-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(MessagingApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Listeners listeners = app.getBean(Listeners.class);
            client.send(queue + ".headers", AmqpTestClient.message("h-1", "plain text").property("tenant", "acme")
                    .property("id", "shadowed").correlationId("c-1").annotation("x-opt-origin", "test"));
            client.send(queue + ".bytes", AmqpTestClient.message("b-1",
                    "raw bytes".getBytes(StandardCharsets.UTF_8)).property("count", 7));
            client.send(queue + ".map", AmqpTestClient.message("p-1", Map.of("id", "m-1", "quantity", 3)));
            client.send(queue + ".raw", AmqpTestClient.message("r-1", Map.of("id", "r-1", "quantity", 4L)));
            await().atMost(Duration.ofSeconds(60)).until(() -> listeners.seen.keySet().containsAll(
                    List.of("body", "bytes", "map-order", "raw-map")));

            assertThat(listeners.seen.get("body")).isEqualTo("plain text");
            @SuppressWarnings("unchecked")
            Map<String, Object> headers = (Map<String, Object>) listeners.seen.get("headers");
            assertThat(headers).containsEntry("tenant", "acme")
                    .containsEntry(AcemqHeaders.MESSAGE_ID, "h-1")
                    .containsEntry(AcemqHeaders.CORRELATION_ID, "c-1")
                    .containsEntry(AcemqHeaders.ADDRESS, queue + ".headers")
                    .containsEntry(AcemqHeaders.ATTEMPT, 1)
                    .containsEntry(AcemqHeaders.DELIVERY_COUNT, 0L)
                    .containsEntry(AcemqHeaders.IDEMPOTENCY_KEY, listeners.seen.get("envelope.id"))
                    .containsEntry(AcemqHeaders.MESSAGE_ANNOTATIONS, Map.of("x-opt-origin", "test"))
                    .as("Spring's reserved names are no headers").doesNotContainKeys("id", "timestamp");
            Message<?> message = (Message<?>) listeners.seen.get("message");
            assertThat(message.getPayload()).isEqualTo("plain text");
            assertThat(message.getHeaders()).containsEntry("tenant", "acme");
            assertThat(listeners.seen.get("envelope.attempt")).isEqualTo(1);
            assertThat(listeners.seen.get("missing")).isEqualTo("null");

            assertThat(listeners.seen.get("bytes")).isEqualTo("raw bytes attempt 1 count 7");
            assertThat(listeners.seen.get("map-order")).as("an AMQP map to a record")
                    .isEqualTo(new Order("m-1", 3));
            assertThat(listeners.seen.get("raw-map")).as("an AMQP map to a Map, as it is")
                    .isEqualTo(Map.of("id", "r-1", "quantity", 4L));
        }
    }

    static class TwoBodies {
        @AcemqListener(address = "two-bodies")
        void onOrder(Order order, Order other) {
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(TwoBodies.class)
    static class TwoBodiesApp {
    }

    @Test
    void aMethodWhoseParametersCannotBeResolvedFailsTheStart() throws NoSuchMethodException {
        // the names are in the message when the class was compiled with -parameters (as Boot's parent does:
        // tooling/spring-boot-lines runs this test too)
        java.lang.reflect.Parameter[] parameters =
                TwoBodies.class.getDeclaredMethod("onOrder", Order.class, Order.class).getParameters();
        String order = parameters[0].isNamePresent() ? " order" : "";
        String other = parameters[1].isNamePresent() ? " other" : "";
        assertThatThrownBy(() -> AcemqListenerIT.start(TwoBodiesApp.class).close())
                .hasStackTraceContaining("@AcemqListener method TwoBodies.onOrder takes 2 body parameters "
                        + "(parameter 0 (" + Order.class.getTypeName() + order + "), parameter 1 ("
                        + Order.class.getTypeName() + other + ")), but a message has one body: annotate the others "
                        + "with @Header(\"name\") or @Headers, or declare them as Envelope or Message<?>");
    }
}

package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqConsumerConnectionEvent;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.acemq.amqp.spring.AcemqListenerRegistry;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.EmbeddedArtemisExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.context.event.EventListener;

/**
 * Two listeners on two brokers in one application ({@code acemq.connection.*} and {@code acemq.connections.billing.*}):
 * each consumes its own broker's messages exactly once, health and meters show both connections, and one broker
 * stopped turns health DOWN naming that connection while the other keeps consuming.
 */
@Timeout(180)
class SeveralConnectionsIT {

    @RegisterExtension
    static final EmbeddedArtemisExtension ORDERS_BROKER = EmbeddedArtemisExtension.of(
            EmbeddedArtemis.builder().persistent(false));

    @RegisterExtension
    static final EmbeddedArtemisExtension BILLING_BROKER = EmbeddedArtemisExtension.of(
            EmbeddedArtemis.builder().persistent(true));

    /** Two listeners with one address each, on two connections; what each received, by message id. */
    static class Listeners {
        final Map<String, AtomicInteger> orders = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> invoices = new ConcurrentHashMap<>();
        final List<AcemqConsumerConnectionEvent> events = new CopyOnWriteArrayList<>();

        @AcemqListener(address = "${test.address}", id = "orders")
        void onOrder(String body, Envelope envelope) {
            orders.computeIfAbsent(String.valueOf(envelope.messageId()), k -> new AtomicInteger()).incrementAndGet();
        }

        @AcemqListener(address = "${test.address}", name = "invoices", connection = "billing")
        void onInvoice(String body, Envelope envelope) {
            invoices.computeIfAbsent(String.valueOf(envelope.messageId()), k -> new AtomicInteger()).incrementAndGet();
        }

        @EventListener
        void on(AcemqConsumerConnectionEvent event) {
            events.add(event);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Listeners.class)
    static class App {
    }

    static List<AmqpTestClient.MessageSpec> messages(String prefix, int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> AmqpTestClient.message(prefix + i, "body " + i)).toList();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Map<String, Object>> connections(Health health) {
        return (Map<String, Map<String, Object>>) health.getDetails().get("connections");
    }

    static double connectedGauge(MeterRegistry registry, String connection) {
        Gauge g = registry.find("acemq.consumer.connected").tag("connection", connection).gauge();
        return g == null ? -1 : g.value();
    }

    @Test
    void twoListenersOnTwoBrokersEachConsumeTheirOwnMessagesAndHealthShowsBoth() {
        // the same address on both brokers: what a listener receives tells which broker it consumed from
        String address = "several-" + UUID.randomUUID();
        EmbeddedArtemis orders = ORDERS_BROKER.broker();
        EmbeddedArtemis billing = BILLING_BROKER.broker();
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE)
                .properties("spring.autoconfigure.exclude="
                                + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
                        "management.health.acemq.enabled=true", "test.address=" + address,
                        "acemq.connection.host=" + orders.host(), "acemq.connection.port=" + orders.port(),
                        "acemq.connections.billing.host=" + billing.host(),
                        "acemq.connections.billing.port=" + billing.port(),
                        "acemq.connections.billing.reconnect.initial-delay=100ms",
                        "acemq.connections.billing.reconnect.max-delay=500ms")
                .run();
                AmqpTestClient ordersClient = AmqpTestClient.connect(orders)) {
            Listeners listeners = app.getBean(Listeners.class);
            HealthIndicator health = app.getBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN, HealthIndicator.class);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            AcemqListenerContainer container = app.getBean(AcemqListenerContainer.class);
            AcemqListenerRegistry listenerRegistry = app.getBean(AcemqListenerRegistry.class);

            assertThat(container.consumers()).containsOnlyKeys("default", "billing");
            assertThat(listenerRegistry.listener("orders").connection()).isEqualTo("default");
            assertThat(listenerRegistry.listener("invoices").connection()).isEqualTo("billing");

            try (AmqpTestClient billingClient = AmqpTestClient.connect(billing)) {
                ordersClient.send(address, messages("order-", 0, 20));
                billingClient.send(address, messages("invoice-", 0, 15));
                // copies of the first five: each is a duplicate on its own connection, the store being shared
                ordersClient.send(address, messages("order-", 0, 5));
                billingClient.send(address, messages("invoice-", 0, 5));
            }
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(listeners.orders).hasSize(20);
                assertThat(listeners.invoices).hasSize(15);
                assertThat(orders.messageCount(address)).isZero();
                assertThat(billing.messageCount(address)).isZero();
            });
            assertThat(listeners.orders.keySet()).allMatch(id -> id.startsWith("order-"));
            assertThat(listeners.invoices.keySet()).allMatch(id -> id.startsWith("invoice-"));
            assertThat(listeners.orders.values()).allMatch(n -> n.get() == 1);
            assertThat(listeners.invoices.values()).allMatch(n -> n.get() == 1);

            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                Health h = health.health();
                assertThat(h.getStatus()).isEqualTo(Status.UP);
                assertThat(connections(h)).containsOnlyKeys("default", "billing");
                assertThat(connections(h).get("default")).containsEntry("status", "UP")
                        .containsEntry("connected", true);
                assertThat(connections(h).get("billing")).containsEntry("status", "UP")
                        .containsEntry("connected", true);
                assertThat((Map<String, ?>) connections(h).get("billing").get("subscriptions"))
                        .containsOnlyKeys("invoices");
                assertThat(connectedGauge(registry, "default")).isEqualTo(1.0);
                assertThat(connectedGauge(registry, "billing")).isEqualTo(1.0);
                // connection events come from the registry's periodic check (up to 500 ms after the fact)
                assertThat(listeners.events).extracting(AcemqConsumerConnectionEvent::getConnection)
                        .contains("default", "billing");
            });
            assertThat(registry.find("acemq.consumer.deliveries").tags("connection", "billing",
                    "subscription", "invoices", "outcome", "accepted", "reason", "duplicate").counter().count())
                    .isEqualTo(5.0);

            // the billing broker goes away: health DOWN, naming it; the orders connection keeps consuming
            billing.stop();
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                Health h = health.health();
                assertThat(h.getStatus()).isEqualTo(Status.DOWN);
                assertThat(connections(h).get("billing")).containsEntry("status", "DOWN")
                        .containsEntry("connected", false);
                assertThat(connections(h).get("default")).containsEntry("status", "UP");
                assertThat(listeners.events).anyMatch(e -> e.getConnection().equals("billing") && !e.isConnected());
            });
            assertThat(listeners.events).noneMatch(e -> e.getConnection().equals("default") && !e.isConnected());
            ordersClient.send(address, messages("order-", 20, 30));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(listeners.orders).hasSize(30));
            assertThat(health.health().getStatus()).isEqualTo(Status.DOWN);

            // back: the billing connection reconnects and consumes again
            billing.start();
            try (AmqpTestClient billingClient = AmqpTestClient.connect(billing)) {
                billingClient.send(address, messages("invoice-", 15, 20));
            }
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(listeners.invoices).hasSize(20);
                assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            });
            assertThat(listeners.orders.values()).as("every order once").allMatch(n -> n.get() == 1);
            assertThat(listeners.invoices.values()).as("every invoice once").allMatch(n -> n.get() == 1);
        }
    }

    // ------------------------------------------------------------------ configuration errors

    static class UnknownConnection {
        @AcemqListener(address = "q", connection = "nope")
        void onMessage(String body) {
        }
    }

    static class OnBilling {
        @AcemqListener(address = "q", name = "on-billing")
        void onMessage(String body) {
        }
    }

    final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AcemqAutoConfiguration.class))
            .withPropertyValues("acemq.consumer.auto-startup=false");

    static Throwable cause(Throwable failure) {
        assertThat(failure).as("the start failed").isNotNull();
        return org.springframework.core.NestedExceptionUtils.getMostSpecificCause(failure);
    }

    @Test
    void aListenerNamingAConnectionThatIsNotConfiguredFailsTheStart() {
        runner.withBean(UnknownConnection.class).withPropertyValues("acemq.connections.billing.host=b2")
                .run(context -> assertThat(cause(context.getStartupFailure()))
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("AceMQ listener 'q' (UnknownConnection.onMessage): no AceMQ connection is named "
                                + "'nope'; the connections are [default, billing] (default is acemq.connection.*, "
                                + "the others acemq.connections.<name>.*)"));
        runner.withBean(OnBilling.class).withPropertyValues("acemq.listeners.on-billing.connection=billing")
                .run(context -> assertThat(cause(context.getStartupFailure()))
                        .hasMessageContaining("no AceMQ connection is named 'billing'; the connections are [default]"));
        runner.withBean(OnBilling.class).withPropertyValues("acemq.connections.default.host=b2")
                .run(context -> assertThat(cause(context.getStartupFailure()))
                        .hasMessageContaining("acemq.connections.default is set, but the connection named 'default' "
                                + "is acemq.connection.*"));
    }

    @Test
    void theListenerPropertyChoosesTheConnectionOverTheAnnotation() {
        runner.withBean(UnknownConnection.class)
                .withPropertyValues("acemq.connections.billing.host=b2", "acemq.listeners.q.connection=billing")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    ListenerContainer container = (ListenerContainer) context.getBean(AcemqListenerContainer.class);
                    assertThat(container.subscriptionsByConnection()).containsOnlyKeys("billing");
                    assertThat(context.getBean(AcemqListenerRegistry.class).listener("q").connection())
                            .isEqualTo("billing");
                });
    }
}

package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * The starter in a real Spring Boot application on an embedded Artemis broker: one annotated method consumes
 * idempotently, with meters in the application's registry and the {@code acemq} health contributor.
 */
@Timeout(180)
class AcemqListenerIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    static ConfigurableApplicationContext start(Class<?> app, String... properties) {
        return new SpringApplicationBuilder(app).web(WebApplicationType.NONE)
                .properties(SharedBroker.connectionProperties())
                .properties("spring.autoconfigure.exclude=" + NO_DATA_SOURCE,
                        "management.health.acemq.enabled=true")
                .properties(properties)
                .run();
    }

    /** DataSourceAutoConfiguration on Boot 4 and on Boot 3 (these tests run on every line: tooling/spring-boot-lines) */
    static final String NO_DATA_SOURCE = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration,"
            + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration";

    record Order(String id, String kind) {
    }

    /** The application: one annotated method and nothing else of AceMQ. */
    static class Orders {
        final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
        final AtomicInteger calls = new AtomicInteger();

        @AcemqListener(address = "${test.queue}", concurrency = "4", maxAttempts = "3",
                permanentFailure = IllegalArgumentException.class)
        void onOrder(Order order, Envelope envelope) {
            calls.incrementAndGet();
            switch (order.kind()) {
                case "permanent" -> throw new PermanentMessageException("order " + order.id() + " is invalid");
                case "declared" -> throw new IllegalArgumentException("order " + order.id() + " has no customer");
                case "transient" -> {
                    if (envelope.attempt() == 1) {
                        throw new IllegalStateException("stock service briefly unavailable");
                    }
                }
                default -> { }
            }
            effects.computeIfAbsent(order.id(), k -> new AtomicInteger()).incrementAndGet();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Orders.class)
    static class OrdersApp {
    }

    static AmqpTestClient.MessageSpec order(String id, String kind) {
        return AmqpTestClient.message(id, "{\"id\":\"" + id + "\",\"kind\":\"" + kind + "\"}");
    }

    static double count(MeterRegistry registry, String queue, String outcome, String reason) {
        var counter = registry.find("acemq.consumer.deliveries").tags("subscription", queue, "outcome", outcome,
                "reason", reason).counter();
        return counter == null ? 0 : counter.count();
    }

    @Test
    void oneAnnotatedMethodConsumesIdempotentlyWithMetersAndHealth() {
        String queue = "it-orders-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(OrdersApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Orders orders = app.getBean(Orders.class);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            for (int i = 0; i < 10; i++) {
                client.send(queue, order("o-" + i, "ok"));
            }
            client.send(queue, order("t-1", "transient"), order("t-2", "transient"), order("p-1", "permanent"),
                    order("d-1", "declared"));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(orders.effects).hasSize(12);
                assertThat(count(registry, queue, "rejected", "permanent")).isEqualTo(2);
            });
            client.send(queue, order("o-1", "ok"), order("o-2", "ok"), order("t-1", "transient"));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(count(registry, queue, "accepted", "duplicate")).isEqualTo(3));

            assertThat(orders.effects.values()).as("every order applied exactly once").allMatch(n -> n.get() == 1);
            assertThat(count(registry, queue, "accepted", "processed")).isEqualTo(12);
            assertThat(count(registry, queue, "modified", "failed")).as("the two transient failures").isEqualTo(2);
            assertThat(orders.calls.get()).as("12 successes + 2 transient + 2 permanent; duplicates never ran")
                    .isEqualTo(16);
            assertThat(registry.find("acemq.consumer.connected").gauge().value()).isEqualTo(1.0);

            ActuatorHealth.Snapshot health = ActuatorHealth.of(app).health();
            assertThat(health.status()).isEqualTo("UP");
            assertThat(health.details()).containsEntry("state", "RUNNING").containsEntry("connected", true);
            @SuppressWarnings("unchecked")
            Map<String, Map<String, Object>> subscriptions =
                    (Map<String, Map<String, Object>>) health.details().get("subscriptions");
            assertThat(subscriptions.get(queue)).containsEntry("address", queue).containsEntry("attached", true);
            assertThat(health.text()).as("no credential in the health details")
                    .doesNotContain(SharedBroker.PASSWORD);
        }
    }

    /** The application's rejection handler: parks permanent failures, with the exception, in a queue of its own. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Orders.class)
    static class ParkingApp {
        final List<RejectionHandler.Rejection> seen = new CopyOnWriteArrayList<>();

        @Bean(destroyMethod = "close")
        AmqpTestClient parkingClient() {
            return AmqpTestClient.connect(broker);
        }

        @Bean
        RejectionHandler parkPermanentFailures(AmqpTestClient parkingClient, @Value("${test.queue}") String queue) {
            return rejection -> {
                seen.add(rejection);
                if (rejection.reason() != SettleReason.PERMANENT) {
                    return RejectionHandler.Decision.REJECT;
                }
                Throwable failure = rejection.failure().orElseThrow();
                parkingClient.send(queue + ".parked", AmqpTestClient.message(
                        rejection.envelope().orElseThrow().messageId(),
                        rejection.envelope().orElseThrow().body(String.class))
                        .property("exception-class", failure.getClass().getName())
                        .property("exception-message", String.valueOf(failure.getMessage())));
                return RejectionHandler.Decision.ACCEPT;
            };
        }
    }

    @Test
    void aRejectionHandlerBeanTakesPermanentFailuresOverAndTheyAreAcceptedNotDeadLettered() {
        String queue = "it-parking-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(ParkingApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            client.send(queue, order("p-1", "permanent"), order("d-1", "declared"), order("o-1", "ok"));
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                assertThat(count(registry, queue, "accepted", "permanent")).isEqualTo(2);
                assertThat(count(registry, queue, "accepted", "processed")).isEqualTo(1);
            });
            assertThat(count(registry, queue, "rejected", "permanent")).isZero();
            ParkingApp parking = app.getBean(ParkingApp.class);
            assertThat(parking.seen).extracting(r -> r.envelope().orElseThrow().messageId())
                    .containsExactlyInAnyOrder("p-1", "d-1");
            assertThat(parking.seen).allSatisfy(r -> assertThat(r.subscription()).isEqualTo(queue));
            List<AmqpTestClient.ReceivedMessage> parked = client.receive(queue + ".parked", 2, Duration.ofSeconds(30));
            assertThat(parked).extracting(m -> m.properties().get("exception-class")).containsExactlyInAnyOrder(
                    PermanentMessageException.class.getName(), IllegalArgumentException.class.getName());
            assertThat(parked).extracting(m -> m.properties().get("exception-message")).containsExactlyInAnyOrder(
                    "order p-1 is invalid", "order d-1 has no customer");
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(queue) == 0);
            assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(queue))).as("nothing dead-lettered")
                    .isZero();
        }
    }

    @Test
    void healthGoesDownWhileTheBrokerIsUnreachableAndUpAgain() throws Exception {
        String queue = "it-health-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(OrdersApp.class, "test.queue=" + queue,
                "acemq.connection.reconnect.initial-delay=50ms", "acemq.connection.reconnect.max-delay=200ms")) {
            ActuatorHealth health = ActuatorHealth.of(app);
            await().atMost(Duration.ofSeconds(30)).until(() -> health.status().equals("UP"));

            // the broker goes away: refuse new connections, drop ours, then stop (with no client left, so that
            // Artemis' stop cannot deadlock on a consumer closing meanwhile; see EmbeddedArtemis.restart)
            broker.server().getRemotingService().pauseAcceptors();
            try {
                broker.dropAllConnections();
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                    ActuatorHealth.Snapshot h = health.health();
                    assertThat(h.status()).isEqualTo("DOWN");
                    assertThat(h.details()).containsEntry("connected", false);
                });
                await().atMost(Duration.ofSeconds(30)).until(() -> broker.connectionCount() == 0);
                broker.stop();
                assertThat(health.status()).isEqualTo("DOWN");
            } finally {
                broker.start();
            }
            await().atMost(Duration.ofSeconds(60)).until(() -> health.status().equals("UP"));
        }
    }

    @Test
    void withAutoStartupOffTheApplicationStartsTheConsumer() {
        String queue = "it-manual-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(OrdersApp.class, "test.queue=" + queue,
                "acemq.consumer.auto-startup=false");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            AcemqListenerContainer container = app.getBean(AcemqListenerContainer.class);
            ActuatorHealth health = ActuatorHealth.of(app);
            client.send(queue, order("m-1", "ok"));
            assertThat(container.isRunning()).isFalse();
            assertThat(container.consumer()).isEmpty();
            assertThat(health.status()).isEqualTo("UNKNOWN");
            assertThat(broker.consumerCount(queue)).as("nobody consumes yet").isZero();

            container.start();

            Orders orders = app.getBean(Orders.class);
            await().atMost(Duration.ofSeconds(30)).until(() -> orders.effects.containsKey("m-1"));
            assertThat(health.status()).isEqualTo("UP");
        }
    }

    // ---------------------------------------------------------------------------------------- graceful shutdown

    /** A bean the handler uses; it records whether it was destroyed before the handler finished. */
    static class Ledger implements DisposableBean {
        final AtomicBoolean destroyed = new AtomicBoolean();

        @Override
        public void destroy() {
            destroyed.set(true);
        }
    }

    static class Slow {
        final Ledger ledger;
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final Map<String, Boolean> finishedWithLedgerOpen = new ConcurrentHashMap<>();

        Slow(Ledger ledger) {
            this.ledger = ledger;
        }

        @AcemqListener(address = "${test.queue}", prefetch = "5")
        void onMessage(String body, Envelope envelope) throws InterruptedException {
            if (body.equals("slow")) {
                started.countDown();
                assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
            }
            finishedWithLedgerOpen.put(body, !ledger.destroyed.get());
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class SlowApp {
        @Bean
        Ledger ledger() {
            return new Ledger();
        }

        @Bean
        Slow slow(Ledger ledger) {
            return new Slow(ledger);
        }
    }

    /**
     * Also what the close reports: Boot closes the application's meter registries on the context-closed event, and a
     * closed registry registers no new meter, so the container stops on that event ahead of them and the releases
     * made at shutdown are counted ({@code released}/{@code shutdown}) with the running handler's outcome.
     */
    @Test
    void closingTheContextLetsTheRunningHandlerFinishAndReleasesTheRest() throws Exception {
        String queue = "it-shutdown-" + UUID.randomUUID();
        ConfigurableApplicationContext app = start(SlowApp.class, "test.queue=" + queue);
        Slow slow = app.getBean(Slow.class);
        AcemqListenerContainer container = app.getBean(AcemqListenerContainer.class);
        MeterRegistry registry = app.getBean(MeterRegistry.class);
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(queue, AmqpTestClient.message("m-slow", "slow"));
            assertThat(slow.started.await(30, TimeUnit.SECONDS)).isTrue();
            for (int i = 0; i < 4; i++) {
                client.send(queue, AmqpTestClient.message("m-" + i, "waiting-" + i));
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.deliveringCount(queue) == 5);

            CompletableFuture<Void> closing = CompletableFuture.runAsync(app::close);
            await().atMost(Duration.ofSeconds(30)).until(() -> container.consumer()
                    .map(c -> c.health().state() == ConsumerHealth.State.STOPPING).orElse(false));
            assertThat(closing).as("the context waits for the running handler").isNotDone();
            assertThat(slow.ledger.destroyed).as("beans the handler uses are still there").isFalse();

            slow.release.countDown();
            closing.get(60, TimeUnit.SECONDS);

            assertThat(slow.finishedWithLedgerOpen).as("only the running handler ran, before beans were destroyed")
                    .containsExactly(Map.entry("slow", true));
            assertThat(slow.ledger.destroyed).isTrue();
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(broker.deliveringCount(queue)).isZero();
                assertThat(broker.messageCount(queue)).as("the four waiting messages went back, the slow one was "
                        + "accepted").isEqualTo(4);
            });
            assertThat(client.receive(queue, 4, Duration.ofSeconds(30))).extracting(m -> m.body())
                    .containsExactlyInAnyOrder("waiting-0", "waiting-1", "waiting-2", "waiting-3");
            assertThat(registry.isClosed()).as("Boot closed the registry with the context").isTrue();
            assertThat(count(registry, queue, "released", "shutdown")).as("the four waiting deliveries, released at "
                    + "shutdown").isEqualTo(4);
            assertThat(count(registry, queue, "accepted", "processed")).as("the running handler").isEqualTo(1);
            assertThat(registry.find("acemq.consumer.deliveries").tag("subscription", queue).counters().stream()
                    .mapToDouble(c -> c.count()).sum()).as("nothing else").isEqualTo(5);
        } finally {
            slow.release.countDown();
            app.close();
        }
    }

    // ------------------------------------------------------------------------------------------------- tracing

    /** Records the trace the handler runs in, as Boot's tracing (here Brave) sees it. */
    static class Traced {
        final io.micrometer.tracing.Tracer tracer;
        final Map<String, String> seen = new ConcurrentHashMap<>();

        Traced(io.micrometer.tracing.Tracer tracer) {
            this.tracer = tracer;
        }

        @AcemqListener(address = "${test.queue}")
        void onMessage(String body) {
            io.micrometer.tracing.Span span = tracer.currentSpan();
            seen.put(body, span == null ? "no span" : span.context().traceId() + "/" + span.context().parentId());
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class TracedApp {
        @Bean
        Traced traced(io.micrometer.tracing.Tracer tracer) {
            return new Traced(tracer);
        }
    }

    @Test
    void bootsTracingContinuesTheProducersTraceFromTraceparent() {
        String queue = "it-traced-" + UUID.randomUUID();
        String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
        String producerSpan = "00f067aa0ba902b7";
        // OpenTelemetry's tracing is on this module's test class path too (OpenTelemetryTracingIT): leave it out
        try (ConfigurableApplicationContext app = start(TracedApp.class, "test.queue=" + queue,
                "management.tracing.sampling.probability=1.0", "spring.autoconfigure.exclude="
                        + NO_DATA_SOURCE + ","
                        + "org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure."
                        + "OpenTelemetryTracingAutoConfiguration");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(queue, AmqpTestClient.message("t-1", "traced")
                    .property("traceparent", "00-" + traceId + "-" + producerSpan + "-01"));
            Traced traced = app.getBean(Traced.class);
            await().atMost(Duration.ofSeconds(30)).until(() -> traced.seen.containsKey("traced"));
            assertThat(app.getBean(io.micrometer.tracing.Tracer.class)).as("Boot's Brave bridge")
                    .isInstanceOf(io.micrometer.tracing.brave.bridge.BraveTracer.class);
            assertThat(traced.seen.get("traced")).as("the handler runs in a child span of the producer's span")
                    .isEqualTo(traceId + "/" + producerSpan);
        }
    }

    // --------------------------------------------------------------------------- without Micrometer or Actuator

    @Test
    void aContextWithoutMicrometerOrActuatorStartsAndConsumes() {
        String queue = "it-plain-" + UUID.randomUUID();
        new ApplicationContextRunner()
                .withClassLoader(new FilteredClassLoader("io.micrometer.", "org.springframework.boot.health.",
                        "org.springframework.boot.actuate.", "org.springframework.boot.micrometer."))
                .withConfiguration(AutoConfigurations.of(AcemqAutoConfiguration.class))
                .withBean(Orders.class)
                .withPropertyValues(SharedBroker.connectionProperties())
                .withPropertyValues("test.queue=" + queue)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(ListenerContainer.ObserverBinding.class);
                    assertThat(context).doesNotHaveBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN);
                    try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
                        client.send(queue, order("x-1", "ok"), order("x-1", "ok"));
                        Orders orders = context.getBean(Orders.class);
                        await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(queue) == 0
                                && orders.effects.containsKey("x-1"));
                        assertThat(orders.effects.get("x-1")).hasValue(1);
                        assertThat(orders.calls).hasValue(1);
                    }
                });
    }
}

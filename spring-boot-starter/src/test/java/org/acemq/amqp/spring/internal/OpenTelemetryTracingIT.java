package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.common.KeyValues;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.tracing.Tracer;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.micrometer.AcemqProcessContext;
import org.acemq.amqp.consumer.micrometer.AcemqProcessObservationConvention;
import org.acemq.amqp.consumer.micrometer.DefaultAcemqProcessObservationConvention;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.MDC;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * The consumer's process span in a Boot application whose tracing is Boot's own OpenTelemetry set-up (Micrometer
 * Tracing's OpenTelemetry bridge over the OpenTelemetry SDK, both auto-configured; the application adds only a span
 * exporter bean and sampling 1.0): a publisher's span travels in the message, once in application-properties and once
 * in message-annotations, and the {@code @AcemqListener}'s span is its child, named and described by the OpenTelemetry
 * messaging conventions, and is the span the listener method runs in (current span and MDC).
 */
@Timeout(180)
class OpenTelemetryTracingIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    static ConfigurableApplicationContext start(Class<?> app, String queue) {
        return new SpringApplicationBuilder(app).web(WebApplicationType.NONE)
                .properties(SharedBroker.connectionProperties())
                // Brave is on this module's test class path too (AcemqListenerIT's tracing test): leave it out
                .properties("spring.autoconfigure.exclude="
                                + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration,"
                                + "org.springframework.boot.micrometer.tracing.brave.autoconfigure.BraveAutoConfiguration",
                        "management.tracing.sampling.probability=1.0",
                        "management.opentelemetry.tracing.export.schedule-delay=50ms",
                        "test.queue=" + queue)
                .run();
    }

    /** What the listener method sees of the trace while it runs. */
    record Seen(String currentTraceId, String currentSpanId, String mdcTraceId, String mdcSpanId) {
    }

    static class Billing {
        final Tracer tracer;
        final Map<String, Seen> seen = new ConcurrentHashMap<>();

        Billing(Tracer tracer) {
            this.tracer = tracer;
        }

        @AcemqListener(address = "${test.queue}", name = "billing")
        void onMessage(String body, Envelope envelope) {
            io.micrometer.tracing.Span span = tracer.currentSpan();
            seen.put(body, new Seen(span == null ? null : span.context().traceId(),
                    span == null ? null : span.context().spanId(), MDC.get("traceId"), MDC.get("spanId")));
        }
    }

    /** What the application adds to Boot's tracing: a span exporter. And the listener. */
    @Configuration(proxyBeanMethods = false)
    static class TracingBeans {
        @Bean
        InMemorySpanExporter spanExporter() {
            return InMemorySpanExporter.create();
        }

        @Bean
        Billing billing(Tracer tracer) {
            return new Billing(tracer);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(TracingBeans.class)
    static class TracedApp {
    }

    /** The application's own convention: another span name and one more low-cardinality key. */
    static class TeamConvention extends DefaultAcemqProcessObservationConvention {
        @Override
        public String getContextualName(AcemqProcessContext context) {
            return context.subscription() + " handle";
        }

        @Override
        public KeyValues getLowCardinalityKeyValues(AcemqProcessContext context) {
            return super.getLowCardinalityKeyValues(context).and("team", "payments");
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(TracingBeans.class)
    static class ConventionApp {
        @Bean
        AcemqProcessObservationConvention teamConvention() {
            return new TeamConvention();
        }
    }

    /**
     * Starts and ends a publisher span through the application's OpenTelemetry (its remote parent carries a
     * tracestate) and writes its context with the application's propagators, as a publisher would.
     */
    static SpanData publish(ConfigurableApplicationContext app, String queue, Map<String, String> headers) {
        OpenTelemetry otel = app.getBean(OpenTelemetry.class);
        SpanContext remote = SpanContext.createFromRemoteParent(
                UUID.randomUUID().toString().replace("-", ""), "b7ad6b7169203331", TraceFlags.getSampled(),
                TraceState.builder().put("vendor", "v1").build());
        Span span = otel.getTracer("publisher").spanBuilder("send " + queue).setSpanKind(SpanKind.PRODUCER)
                .setParent(Context.root().with(Span.wrap(remote))).startSpan();
        otel.getPropagators().getTextMapPropagator().inject(Context.root().with(span), headers, Map::put);
        span.end();
        String spanId = span.getSpanContext().getSpanId();
        return await().atMost(Duration.ofSeconds(30)).until(() -> exported(app).stream()
                .filter(s -> s.getSpanId().equals(spanId)).findFirst(), Optional::isPresent).orElseThrow();
    }

    static List<SpanData> exported(ConfigurableApplicationContext app) {
        return app.getBean(InMemorySpanExporter.class).getFinishedSpanItems();
    }

    static SpanData processSpan(ConfigurableApplicationContext app, String messageId) {
        return await().atMost(Duration.ofSeconds(30)).until(() -> exported(app).stream()
                .filter(s -> messageId.equals(attribute(s, "messaging.message.id"))).findFirst(), Optional::isPresent)
                .orElseThrow();
    }

    static String attribute(SpanData span, String key) {
        return span.getAttributes().get(AttributeKey.stringKey(key));
    }

    @Test
    void theListenersSpanIsAChildOfThePublishersSpanFromApplicationPropertiesAndFromAnnotations() {
        String queue = "it-otel-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(TracedApp.class, queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            assertThat(app.getBean(Tracer.class)).as("Boot's OpenTelemetry bridge")
                    .isInstanceOf(io.micrometer.tracing.otel.bridge.OtelTracer.class);
            Map<String, String> viaProperties = new HashMap<>();
            SpanData publisherA = publish(app, queue, viaProperties);
            Map<String, String> viaAnnotations = new HashMap<>();
            SpanData publisherB = publish(app, queue, viaAnnotations);
            assertThat(viaProperties).containsKeys("traceparent", "tracestate");
            assertThat(publisherA.getTraceId()).isNotEqualTo(publisherB.getTraceId());

            AmqpTestClient.MessageSpec inProperties = AmqpTestClient.message("order-1", "a");
            viaProperties.forEach(inProperties::property);
            AmqpTestClient.MessageSpec inAnnotations = AmqpTestClient.message("order-2", "b");
            viaAnnotations.forEach(inAnnotations::annotation);
            client.send(queue, inProperties, inAnnotations);

            Billing billing = app.getBean(Billing.class);
            Map<String, SpanData> publishers = Map.of("order-1", publisherA, "order-2", publisherB);
            Map<String, String> bodies = Map.of("order-1", "a", "order-2", "b");
            for (String id : List.of("order-1", "order-2")) {
                SpanData process = processSpan(app, id);
                SpanData publisher = publishers.get(id);
                assertThat(process.getName()).as(id).isEqualTo("process " + queue);
                assertThat(process.getKind()).as(id).isEqualTo(SpanKind.CONSUMER);
                assertThat(process.getTraceId()).as(id).isEqualTo(publisher.getTraceId());
                assertThat(process.getParentSpanId()).as(id + ": the publisher's span is the parent")
                        .isEqualTo(publisher.getSpanId());
                assertThat(process.getSpanContext().getTraceState().get("vendor")).as(id + ": tracestate carried")
                        .isEqualTo("v1");
                assertThat(attribute(process, "messaging.system")).as(id).isEqualTo("activemq");
                assertThat(attribute(process, "messaging.destination.name")).as(id).isEqualTo(queue);
                assertThat(attribute(process, "messaging.operation.type")).as(id).isEqualTo("process");
                assertThat(attribute(process, "messaging.operation.name")).as(id).isEqualTo("process");
                assertThat(attribute(process, "messaging.message.id")).as(id).isEqualTo(id);
                assertThat(attribute(process, "messaging.consumer.group.name")).as(id).isEqualTo("billing");
                assertThat(attribute(process, "acemq.outcome")).as(id).isEqualTo("accepted");

                Seen seen = billing.seen.get(bodies.get(id));
                assertThat(seen).as(id + ": the listener ran").isNotNull();
                assertThat(seen).as(id + ": the listener method runs in the process span (current span and MDC)")
                        .isEqualTo(new Seen(process.getTraceId(), process.getSpanId(), process.getTraceId(),
                                process.getSpanId()));
            }
        }
    }

    @Test
    void anAcemqProcessObservationConventionBeanReplacesTheDefault() {
        String queue = "it-otel-convention-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(ConventionApp.class, queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(queue, AmqpTestClient.message("c-1", "x"));
            SpanData span = processSpan(app, "c-1");
            assertThat(span.getName()).isEqualTo("billing handle");
            assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
            assertThat(attribute(span, "team")).isEqualTo("payments");
            assertThat(attribute(span, "messaging.destination.name")).isEqualTo(queue);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(registry.find(MicrometerObserver.OBSERVATION_NAME).tag("team", "payments").timer())
                            .as("the convention's key values tag the Observation's timer").isNotNull());
        }
    }
}

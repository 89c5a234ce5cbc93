package org.acemq.amqp.consumer.micrometer;

import static org.acemq.amqp.testsupport.AmqpTestClient.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelBaggageManager;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The process span as OpenTelemetry exports it, with the real SDK behind Micrometer Tracing's OpenTelemetry bridge (the
 * set-up Spring Boot makes): a publisher's span travels in the message (application properties or message-annotations,
 * as the W3C trace-context AMQP draft says) and the consumer's span is its child, kind CONSUMER, named and described by
 * the OpenTelemetry messaging conventions.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OpenTelemetryTracingIT {

    private static final W3CTraceContextPropagator W3C = W3CTraceContextPropagator.getInstance();

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    private InMemorySpanExporter exporter;
    private SdkTracerProvider provider;
    private Tracer otel;
    private ObservationRegistry observations;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedArtemis.builder().maxDeliveryAttempts(20).build().start();
        client = AmqpTestClient.connect(broker);
    }

    @AfterAll
    static void stopBroker() {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @BeforeEach
    void tracing() {
        exporter = InMemorySpanExporter.create();
        provider = SdkTracerProvider.builder().setSampler(Sampler.alwaysOn())
                .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
        otel = provider.get("acemq-test");
        OtelCurrentTraceContext current = new OtelCurrentTraceContext();
        OtelTracer tracer = new OtelTracer(otel, current, event -> { },
                new OtelBaggageManager(current, List.of(), List.of()));
        OtelPropagator propagator = new OtelPropagator(ContextPropagators.create(W3C), otel);
        observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(
                new ObservationHandler.FirstMatchingCompositeObservationHandler(
                        new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
                        new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
                        new DefaultTracingObservationHandler(tracer)));
    }

    @AfterEach
    void closeTracing() {
        provider.close();
    }

    private static ConnectionSettings settings() {
        return ConnectionSettings.builder(broker.host(), broker.port()).build();
    }

    /** A publisher's span, ended, with a tracestate; its context as the W3C headers a publisher writes. */
    private SpanData publish(String queue, Map<String, String> headers) {
        SpanContext remote = SpanContext.createFromRemoteParent("0af7651916cd43dd8448eb211c80319c",
                "b7ad6b7169203331", TraceFlags.getSampled(), TraceState.builder().put("vendor", "v1").build());
        Span span = otel.spanBuilder("send " + queue).setSpanKind(SpanKind.PRODUCER)
                .setParent(Context.root().with(Span.wrap(remote))).startSpan();
        W3C.inject(Context.root().with(span), headers, Map::put);
        span.end();
        return exporter.getFinishedSpanItems().stream().filter(s -> s.getSpanId().equals(span.getSpanContext()
                .getSpanId())).findFirst().orElseThrow();
    }

    private SpanData processSpan(String messageId) {
        await().until(() -> exporter.getFinishedSpanItems().stream().anyMatch(s -> messageId.equals(
                s.getAttributes().get(AttributeKey.stringKey("messaging.message.id")))));
        return exporter.getFinishedSpanItems().stream().filter(s -> messageId.equals(
                s.getAttributes().get(AttributeKey.stringKey("messaging.message.id")))).findFirst().orElseThrow();
    }

    private static String attribute(SpanData span, String key) {
        return span.getAttributes().get(AttributeKey.stringKey(key));
    }

    @Test
    void theProcessSpanIsAChildOfThePublishersSpanWhetherTheContextIsInApplicationPropertiesOrAnnotations() {
        String queue = "otel-orders";
        Map<String, String> viaProperties = new HashMap<>();
        SpanData publisherA = publish(queue, viaProperties);
        Map<String, String> viaAnnotations = new HashMap<>();
        SpanData publisherB = publish(queue, viaAnnotations);
        assertThat(viaProperties).containsKeys("traceparent", "tracestate");

        Subscription subscription = Subscription.builder(queue, e -> { }).name("billing").build();
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .observer(MicrometerObserver.builder(new SimpleMeterRegistry()).observationRegistry(observations)
                        .build())
                .subscribe(subscription).start()) {
            AmqpTestClient.MessageSpec inProperties = message("order-1", "a").correlationId("conv-1");
            viaProperties.forEach(inProperties::property);
            AmqpTestClient.MessageSpec inAnnotations = message("order-2", "b");
            viaAnnotations.forEach(inAnnotations::annotation);
            client.send(queue, inProperties, inAnnotations);

            SpanData a = processSpan("order-1");
            SpanData b = processSpan("order-2");
            for (SpanData[] pair : new SpanData[][] {{a, publisherA}, {b, publisherB}}) {
                SpanData process = pair[0];
                SpanData publisher = pair[1];
                assertThat(process.getName()).isEqualTo("process " + queue);
                assertThat(process.getKind()).isEqualTo(SpanKind.CONSUMER);
                assertThat(process.getTraceId()).isEqualTo(publisher.getTraceId());
                assertThat(process.getParentSpanId()).as("the publisher's span is the parent")
                        .isEqualTo(publisher.getSpanId());
                assertThat(process.getSpanContext().getTraceState().get("vendor")).as("tracestate carried")
                        .isEqualTo("v1");
                assertThat(attribute(process, "messaging.system")).isEqualTo("activemq");
                assertThat(attribute(process, "messaging.destination.name")).isEqualTo(queue);
                assertThat(attribute(process, "messaging.operation.type")).isEqualTo("process");
                assertThat(attribute(process, "messaging.operation.name")).isEqualTo("process");
                assertThat(attribute(process, "messaging.consumer.group.name")).isEqualTo("billing");
                assertThat(attribute(process, "acemq.subscription")).isEqualTo("billing");
                assertThat(attribute(process, "acemq.outcome")).isEqualTo("accepted");
                assertThat(attribute(process, "acemq.reason")).isEqualTo("processed");
                assertThat(attribute(process, "acemq.attempt")).isEqualTo("1");
                assertThat(attribute(process, "acemq.scope")).isEqualTo(queue);
                assertThat(process.getStatus().getStatusCode()).isNotEqualTo(StatusCode.ERROR);
            }
            assertThat(attribute(a, "messaging.message.conversation_id")).isEqualTo("conv-1");
            assertThat(attribute(b, "messaging.message.conversation_id")).isNull();
        }
    }

    @Test
    void aMalformedTraceparentIsIgnoredTheDeliveryIsProcessedAndItsSpanStartsANewTrace() {
        String queue = "otel-malformed";
        Subscription subscription = Subscription.builder(queue, e -> { }).build();
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .observer(MicrometerObserver.builder(new SimpleMeterRegistry()).observationRegistry(observations)
                        .build())
                .subscribe(subscription).start()) {
            client.send(queue,
                    message("bad-1", "x").property("traceparent", "00-not-a-trace-01").property("tracestate", "a=1"),
                    message("bad-2", "y").annotation("traceparent", "zz-" + "0".repeat(32) + "-" + "1".repeat(16)
                            + "-01"),
                    message("bad-3", "z").annotation("traceparent", 42L));
            for (String id : List.of("bad-1", "bad-2", "bad-3")) {
                SpanData span = processSpan(id);
                assertThat(span.getParentSpanContext().isValid()).as(id + " has no parent").isFalse();
                assertThat(span.getSpanContext().isValid()).isTrue();
                assertThat(span.getKind()).isEqualTo(SpanKind.CONSUMER);
                assertThat(attribute(span, "acemq.outcome")).as(id).isEqualTo("accepted");
            }
            await().until(() -> broker.messageCount(queue) == 0);
        }
    }

    @Test
    void aConventionOfTheApplicationReplacesTheDefault() {
        String queue = "otel-custom";
        AcemqProcessObservationConvention custom = new DefaultAcemqProcessObservationConvention() {
            @Override
            public String getContextualName(AcemqProcessContext context) {
                return context.subscription() + " handle";
            }

            @Override
            public io.micrometer.common.KeyValues getLowCardinalityKeyValues(AcemqProcessContext context) {
                return super.getLowCardinalityKeyValues(context).and("team", "payments");
            }
        };
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .observer(MicrometerObserver.builder(new SimpleMeterRegistry()).observationRegistry(observations)
                        .processObservationConvention(custom).build())
                .subscribe(Subscription.builder(queue, e -> { }).name("pay").build()).start()) {
            client.send(queue, message("c-1", "x"));
            SpanData span = processSpan("c-1");
            assertThat(span.getName()).isEqualTo("pay handle");
            assertThat(attribute(span, "team")).isEqualTo("payments");
            assertThat(attribute(span, "messaging.destination.name")).isEqualTo(queue);
        }
    }
}

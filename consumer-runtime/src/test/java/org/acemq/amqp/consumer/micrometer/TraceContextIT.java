package org.acemq.amqp.consumer.micrometer;

import static org.acemq.amqp.testsupport.AmqpTestClient.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.MDC;
import org.slf4j.helpers.BasicMDCAdapter;
import org.slf4j.helpers.NOPMDCAdapter;
import org.slf4j.spi.MDCAdapter;

/**
 * W3C trace context from message-annotations or application properties reaches the handler: SLF4J MDC and a
 * Micrometer Observation.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TraceContextIT {

    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String SPAN_ID = "00f067aa0ba902b7";
    private static final String TRACEPARENT = "00-" + TRACE_ID + "-" + SPAN_ID + "-01";
    private static final String TRACESTATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
    private static final String ANNOTATED_TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
    private static final String ANNOTATED_TRACEPARENT = "00-" + ANNOTATED_TRACE_ID + "-" + SPAN_ID + "-01";

    private static EmbeddedArtemis broker;
    private static AmqpTestClient client;

    @BeforeAll
    static void realMdc() throws ReflectiveOperationException {
        // slf4j-simple (the test binding) provides a no-op MDC; install the basic thread-local one
        if (MDC.getMDCAdapter() instanceof NOPMDCAdapter) {
            Method set = MDC.class.getDeclaredMethod("setMDCAdapter", MDCAdapter.class);
            set.setAccessible(true);
            set.invoke(null, new BasicMDCAdapter());
        }
    }

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

    private static ConnectionSettings settings() {
        return ConnectionSettings.builder(broker.host(), broker.port()).build();
    }

    @Test
    void handlerSeesTheTraceContextInTheMdcAndTheWorkerThreadIsClearedAfterwards() {
        String queue = "trace-mdc";
        Map<String, Map<String, String>> seen = new ConcurrentHashMap<>();
        // concurrency 1: every message runs on the same worker thread, so a leak would show on the next one
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(queue, e -> {
                    Map<String, String> mdc = MDC.getCopyOfContextMap();
                    seen.put(e.body(String.class), mdc == null ? Map.of() : mdc);
                    if (e.body(String.class).equals("traced-failing") && e.attempt() == 1) {
                        throw new IllegalStateException("fails once, with trace context in the MDC");
                    }
                })
                .start()) {
            client.send(queue, message("m-1", "traced").property("traceparent", TRACEPARENT)
                            .property("tracestate", TRACESTATE),
                    message("m-2", "plain"),
                    message("m-3", "traced-failing").property("traceparent", TRACEPARENT),
                    message("m-4", "invalid").property("traceparent", "00-" + "0".repeat(32) + "-" + SPAN_ID + "-01"),
                    message("m-5", "last"),
                    // message-annotations first: the application properties' context is not read then
                    message("m-6", "annotated").annotation("traceparent", ANNOTATED_TRACEPARENT)
                            .annotation("tracestate", "a=1").property("traceparent", TRACEPARENT)
                            .property("tracestate", TRACESTATE));
            await().until(() -> seen.size() == 6 && broker.messageCount(queue) == 0);
        }
        assertThat(seen.get("annotated")).containsEntry("traceparent", ANNOTATED_TRACEPARENT)
                .containsEntry("tracestate", "a=1").containsEntry("traceId", ANNOTATED_TRACE_ID)
                .containsEntry("spanId", SPAN_ID);
        assertThat(seen.get("traced")).containsEntry("traceparent", TRACEPARENT)
                .containsEntry("tracestate", TRACESTATE).containsEntry("traceId", TRACE_ID)
                .containsEntry("spanId", SPAN_ID);
        assertThat(seen.get("traced-failing")).containsEntry("traceId", TRACE_ID).doesNotContainKey("tracestate");
        for (String untraced : List.of("plain", "invalid", "last")) {
            assertThat(seen.get(untraced)).as(untraced)
                    .doesNotContainKeys("traceparent", "tracestate", "traceId", "spanId");
        }
    }

    @Test
    void handlerRunsInsideAnObservationCarryingTheTraceContextAndTheOutcome() {
        String queue = "trace-observation";
        ObservationRegistry observations = ObservationRegistry.create();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
        List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
        observations.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }

            @Override
            public void onStop(Observation.Context context) {
                stopped.add(context);
            }
        });
        Map<String, String> current = new ConcurrentHashMap<>();
        Subscription subscription = Subscription.builder(queue, e -> {
            Observation observation = observations.getCurrentObservation();
            current.put(e.body(String.class), observation == null ? "none" : observation.getContext().getName());
            if (e.body(String.class).equals("fail")) {
                throw new IllegalStateException("boom");
            }
        }).name("billing").maxAttempts(1).build();
        try (AmqpConsumer consumer = AmqpConsumer.builder().connection(settings())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .observer(MicrometerObserver.builder(new SimpleMeterRegistry()).observationRegistry(observations)
                        .build())
                .subscribe(subscription).start()) {
            client.send(queue, message("o-1", "ok").property("traceparent", TRACEPARENT)
                    .property("tracestate", TRACESTATE), message("o-2", "fail"));
            await().until(() -> stopped.size() == 2);
        }
        assertThat(current).containsEntry("ok", "acemq.consumer.process").containsEntry("fail",
                "acemq.consumer.process");

        Observation.Context ok = stopped.stream().filter(c -> c.getError() == null).findFirst().orElseThrow();
        assertThat(ok.getName()).isEqualTo("acemq.consumer.process");
        assertThat(ok.getContextualName()).isEqualTo("process " + queue);
        assertThat(ok.getLowCardinalityKeyValue("acemq.subscription").getValue()).isEqualTo("billing");
        assertThat(ok.getLowCardinalityKeyValue("acemq.outcome").getValue()).isEqualTo("accepted");
        assertThat(ok.getLowCardinalityKeyValue("acemq.reason").getValue()).isEqualTo("processed");
        assertThat(ok.getHighCardinalityKeyValue("messaging.message.id").getValue()).isEqualTo("o-1");
        assertThat(ok).isInstanceOf(AcemqProcessContext.class);
        // a tracing bridge reads the producer's context through the ReceiverContext's getter and carrier
        assertThat(ok).isInstanceOf(ReceiverContext.class);
        @SuppressWarnings("unchecked")
        ReceiverContext<Object> receiver = (ReceiverContext<Object>) ok;
        assertThat(receiver.getKind()).isEqualTo(Kind.CONSUMER);
        assertThat(receiver.getGetter().get(receiver.getCarrier(), "traceparent")).isEqualTo(TRACEPARENT);
        assertThat(receiver.getGetter().get(receiver.getCarrier(), "tracestate")).isEqualTo(TRACESTATE);

        // the meters the observation makes carry only the low-cardinality values: never a message id
        var timer = meters.get("acemq.consumer.process").tags("acemq.outcome", "accepted", "acemq.reason",
                "processed", "messaging.system", "activemq", "messaging.destination.name", queue,
                "messaging.operation.type", "process", "messaging.consumer.group.name", "billing").timer();
        assertThat(timer.count()).isEqualTo(1);
        assertThat(meters.getMeters()).allSatisfy(m -> assertThat(m.getId().getTag("messaging.message.id")).isNull());

        Observation.Context failed = stopped.stream().filter(c -> c.getError() != null).findFirst().orElseThrow();
        assertThat(failed.getError()).hasMessage("boom");
        assertThat(failed.getLowCardinalityKeyValue("acemq.outcome").getValue()).isEqualTo("rejected");
        assertThat(failed.getLowCardinalityKeyValue("acemq.reason").getValue()).isEqualTo("poison");
        @SuppressWarnings("unchecked")
        ReceiverContext<Object> untraced = (ReceiverContext<Object>) failed;
        assertThat(untraced.getGetter().get(untraced.getCarrier(), "traceparent")).isNull();
    }
}

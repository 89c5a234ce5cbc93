package org.acemq.amqp.consumer.internal;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.ReceiverContext;
import java.util.Map;
import java.util.Objects;

/**
 * The only runtime class that touches micrometer-observation (an optional dependency): it is loaded only when an
 * {@link ObservationRegistry} is given to the builder.
 *
 * <p>Each handler call runs inside an Observation named {@value #NAME} whose context is a {@link ReceiverContext}
 * over the message's application properties: a tracing bridge (micrometer-tracing) that propagates through
 * {@code ReceiverContext} extracts {@code traceparent}/{@code tracestate} itself and parents its span on the
 * producer's. Without such a bridge, the {@code traceparent} is still recorded as a high-cardinality key value.
 */
public final class ObservationSupport implements HandlerScope.Observations {

    /** The Observation name. */
    public static final String NAME = "acemq.consumer.process";

    private final ObservationRegistry registry;

    private ObservationSupport(ObservationRegistry registry) {
        this.registry = registry;
    }

    /**
     * @param registry the registry (not null)
     * @return the hook, as an opaque object so that callers need not load this class's types
     */
    public static Object of(ObservationRegistry registry) {
        return new ObservationSupport(Objects.requireNonNull(registry, "observationRegistry must not be null"));
    }

    @Override
    public HandlerScope.Handle start(String subscription, String address, Map<String, Object> properties,
                                     TraceContext trace) {
        if (registry.isNoop()) {
            return null;
        }
        ReceiverContext<Map<String, Object>> context = new ReceiverContext<>((carrier, key) -> {
            Object value = carrier == null ? null : carrier.get(key);
            return value instanceof String s ? s : null;
        });
        context.setCarrier(properties);
        context.setRemoteServiceName("amqp");
        Observation observation = Observation.createNotStarted(NAME, () -> context, registry)
                .contextualName(address + " process")
                .lowCardinalityKeyValue("subscription", subscription);
        if (trace != null) {
            observation.highCardinalityKeyValue("traceparent", trace.traceparent());
        }
        observation.start();
        Observation.Scope scope = observation.openScope();
        return new HandlerScope.Handle() {
            @Override
            public void error(Throwable error) {
                observation.error(error);
            }

            @Override
            public void stop(String outcome) {
                try {
                    scope.close();
                } finally {
                    observation.lowCardinalityKeyValue("outcome", outcome);
                    observation.stop();
                }
            }
        };
    }
}

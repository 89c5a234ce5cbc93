package org.acemq.amqp.consumer.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.ReceiverContext;
import java.util.Locale;
import java.util.Map;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;

/**
 * One handler call as a Micrometer Observation named {@value MicrometerObserver#OBSERVATION_NAME}, with a
 * {@link ReceiverContext} whose carrier is the message's application properties: a tracing bridge that propagates
 * through {@code ReceiverContext} (micrometer-tracing) extracts {@code traceparent}/{@code tracestate} with its own
 * propagator and parents its span on the producer's. The {@code traceparent} is also recorded as a high-cardinality
 * key value.
 */
final class ProcessObservation implements ConsumerObserver.HandlerScope {

    private static final String TRACEPARENT = "traceparent";

    private final Observation observation;
    private final Observation.Scope scope;

    private ProcessObservation(Observation observation) {
        this.observation = observation;
        this.scope = observation.openScope();
    }

    static ProcessObservation start(ObservationRegistry registry, String subscription, String address,
                                    Map<String, Object> properties) {
        ReceiverContext<Map<String, Object>> context = new ReceiverContext<>((carrier, key) -> {
            Object value = carrier == null ? null : carrier.get(key);
            return value instanceof String s ? s : null;
        });
        context.setCarrier(properties);
        context.setRemoteServiceName("amqp");
        Observation observation = Observation.createNotStarted(MicrometerObserver.OBSERVATION_NAME, () -> context,
                        registry)
                .contextualName(address + " process")
                .lowCardinalityKeyValue(AcemqMeter.TagKey.SUBSCRIPTION, subscription);
        if (properties.get(TRACEPARENT) instanceof String traceparent) {
            observation.highCardinalityKeyValue(TRACEPARENT, traceparent);
        }
        return new ProcessObservation(observation.start());
    }

    @Override
    public void failed(Throwable error) {
        observation.error(error);
    }

    @Override
    public void close(Outcome outcome) {
        try {
            scope.close();
        } finally {
            observation.lowCardinalityKeyValue(AcemqMeter.TagKey.OUTCOME,
                    outcome == null ? "none" : outcome.name().toLowerCase(Locale.ROOT));
            observation.stop();
        }
    }
}

package org.acemq.amqp.spring.internal;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.micrometer.AcemqProcessObservationConvention;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Binds the consumer to the application's {@link MeterRegistry} and, when there is one, {@link ObservationRegistry}
 * (so that Boot's tracing continues the producer's trace from {@code traceparent}). An
 * {@link AcemqProcessObservationConvention} bean of the application, when there is exactly one (or a primary one),
 * replaces the default convention of the process Observation. Loaded only when Micrometer is on the class path; does
 * nothing when the application has no MeterRegistry bean.
 *
 * <p>Each connection's consumer gets its own observer, whose meters carry the tag {@value #CONNECTION_TAG} (the
 * connection's name, {@code default} for {@code acemq.connection.*}), so that the consumers of several connections
 * publish into one registry side by side.
 */
final class MicrometerBinding implements ListenerContainer.ObserverBinding {

    private final ObjectProvider<MeterRegistry> meters;
    private final ObjectProvider<ObservationRegistry> observations;
    private final ObjectProvider<AcemqProcessObservationConvention> conventions;

    /** The tag naming the connection on every meter of the starter's consumers. */
    static final String CONNECTION_TAG = "connection";

    MicrometerBinding(ObjectProvider<MeterRegistry> meters, ObjectProvider<ObservationRegistry> observations,
            ObjectProvider<AcemqProcessObservationConvention> conventions) {
        this.meters = meters;
        this.observations = observations;
        this.conventions = conventions;
    }

    @Override
    public java.util.function.Consumer<AmqpConsumer> configure(AmqpConsumer.Builder builder, String connection) {
        MeterRegistry registry = meters.getIfUnique();
        if (registry == null) {
            return c -> { };
        }
        MicrometerObserver.Builder b = MicrometerObserver.builder(registry)
                .commonTags(io.micrometer.core.instrument.Tags.of(CONNECTION_TAG, connection));
        ObservationRegistry observationRegistry = observations.getIfUnique();
        if (observationRegistry != null) {
            b.observationRegistry(observationRegistry);
        }
        AcemqProcessObservationConvention convention = conventions.getIfUnique();
        if (convention != null) {
            b.processObservationConvention(convention);
        }
        MicrometerObserver observer = b.build();
        builder.observer(observer);
        return observer::bindTo;
    }
}

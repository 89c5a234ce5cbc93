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
 */
final class MicrometerBinding implements ListenerContainer.ObserverBinding {

    private final ObjectProvider<MeterRegistry> meters;
    private final ObjectProvider<ObservationRegistry> observations;
    private final ObjectProvider<AcemqProcessObservationConvention> conventions;
    private MicrometerObserver observer;

    MicrometerBinding(ObjectProvider<MeterRegistry> meters, ObjectProvider<ObservationRegistry> observations,
            ObjectProvider<AcemqProcessObservationConvention> conventions) {
        this.meters = meters;
        this.observations = observations;
        this.conventions = conventions;
    }

    @Override
    public void configure(AmqpConsumer.Builder builder) {
        MeterRegistry registry = meters.getIfUnique();
        if (registry == null) {
            observer = null;
            return;
        }
        MicrometerObserver.Builder b = MicrometerObserver.builder(registry);
        ObservationRegistry observationRegistry = observations.getIfUnique();
        if (observationRegistry != null) {
            b.observationRegistry(observationRegistry);
        }
        AcemqProcessObservationConvention convention = conventions.getIfUnique();
        if (convention != null) {
            b.processObservationConvention(convention);
        }
        observer = b.build();
        builder.observer(observer);
    }

    @Override
    public void started(AmqpConsumer consumer) {
        if (observer != null) {
            observer.bindTo(consumer);
        }
    }
}

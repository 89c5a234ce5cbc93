package org.acemq.amqp.spring.internal;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Binds the consumer to the application's {@link MeterRegistry} and, when there is one, {@link ObservationRegistry}
 * (so that Boot's tracing continues the producer's trace from {@code traceparent}). Loaded only when Micrometer is
 * on the class path; does nothing when the application has no MeterRegistry bean.
 */
final class MicrometerBinding implements ListenerContainer.ObserverBinding {

    private final ObjectProvider<MeterRegistry> meters;
    private final ObjectProvider<ObservationRegistry> observations;
    private MicrometerObserver observer;

    MicrometerBinding(ObjectProvider<MeterRegistry> meters, ObjectProvider<ObservationRegistry> observations) {
        this.meters = meters;
        this.observations = observations;
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

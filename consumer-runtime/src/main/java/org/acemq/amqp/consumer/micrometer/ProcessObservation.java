package org.acemq.amqp.consumer.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

/**
 * One handler call as a Micrometer Observation over an {@link AcemqProcessContext}, named and described by an
 * {@link AcemqProcessObservationConvention}: started and made current before the handler runs, stopped once the
 * delivery's outcome is decided (the convention reads outcome and reason at stop).
 */
final class ProcessObservation implements ConsumerObserver.HandlerScope {

    private final AcemqProcessContext context;
    private final Observation observation;
    private final Observation.Scope scope;

    private ProcessObservation(AcemqProcessContext context, Observation observation) {
        this.context = context;
        this.observation = observation;
        this.scope = observation.openScope();
    }

    static ProcessObservation start(ObservationRegistry registry, AcemqProcessObservationConvention convention,
                                    String subscription, Envelope envelope, String brokerProduct) {
        AcemqProcessContext context = new AcemqProcessContext(subscription, envelope, brokerProduct);
        Observation observation = Observation.createNotStarted(convention,
                DefaultAcemqProcessObservationConvention.INSTANCE, () -> context, registry);
        return new ProcessObservation(context, observation.start());
    }

    @Override
    public void failed(Throwable error) {
        observation.error(error);
    }

    @Override
    public void close(Outcome outcome) {
        close(outcome, null);
    }

    @Override
    public void close(Outcome outcome, SettleReason reason) {
        try {
            scope.close();
        } finally {
            context.decided(outcome, reason);
            observation.stop();
        }
    }
}

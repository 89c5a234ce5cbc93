package org.acemq.amqp.consumer.micrometer;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and describes the Observation around each handler call: its name, contextual (span) name and key values,
 * read from an {@link AcemqProcessContext}. {@link DefaultAcemqProcessObservationConvention} follows the OpenTelemetry
 * messaging semantic conventions for a {@code process} span. To change what is recorded, give
 * {@link MicrometerObserver.Builder#processObservationConvention} an implementation (extending the default is the
 * usual way), or register a global convention for {@link AcemqProcessContext} on the {@code ObservationRegistry}
 * (which then wins over both, as Micrometer's rules say).
 *
 * <p>Low-cardinality key values become meter tags (through a meter observation handler) as well as span attributes:
 * keep their values bounded. Message ids, correlation ids and attempts belong in the high-cardinality key values.
 *
 * <p><b>Threading:</b> called on the worker thread that runs the handler (start) and settles it (stop); an
 * implementation must be thread-safe and must not throw.
 */
public interface AcemqProcessObservationConvention extends ObservationConvention<AcemqProcessContext> {

    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof AcemqProcessContext;
    }
}

package org.acemq.amqp.consumer.internal;

import java.util.Locale;
import java.util.Map;
import org.acemq.amqp.consumer.Outcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * What surrounds one handler call on its worker thread: the message's W3C trace context in the SLF4J MDC, and an
 * Observation when an {@code ObservationRegistry} was supplied. Opened just before the handler runs; closed by
 * {@link SubscriptionRunner#process} on the same thread once the delivery's outcome is decided, whatever happened.
 */
final class HandlerScope {

    /** MDC key: the {@code traceparent} application property as received. */
    static final String MDC_TRACEPARENT = "traceparent";
    /** MDC key: the {@code tracestate} application property as received. */
    static final String MDC_TRACESTATE = "tracestate";
    /** MDC key: the trace id parsed from {@code traceparent}. */
    static final String MDC_TRACE_ID = "traceId";
    /** MDC key: the parent (producer) span id parsed from {@code traceparent}. */
    static final String MDC_SPAN_ID = "spanId";

    /** Starts and ends the optional Observation; implemented over micrometer-observation only when it is used. */
    interface Observations {
        Handle start(String subscription, String address, Map<String, Object> properties, TraceContext trace);
    }

    /** One started Observation, in scope on the worker thread until {@link #stop}. */
    interface Handle {
        void error(Throwable error);

        void stop(String outcome);
    }

    private static final Logger LOG = LoggerFactory.getLogger(HandlerScope.class);

    private final TraceContext trace;
    private final Handle observation;
    private volatile Outcome outcome;

    private HandlerScope(TraceContext trace, Handle observation) {
        this.trace = trace;
        this.observation = observation;
    }

    /** @return a scope, or null when there is neither trace context nor an Observation to set up */
    static HandlerScope open(TraceContext trace, Observations observations, String subscription, String address,
                             Map<String, Object> properties) {
        if (trace == null && observations == null) {
            return null;
        }
        if (trace != null) {
            MDC.put(MDC_TRACEPARENT, trace.traceparent());
            if (trace.tracestate() != null) {
                MDC.put(MDC_TRACESTATE, trace.tracestate());
            }
            MDC.put(MDC_TRACE_ID, trace.traceId());
            MDC.put(MDC_SPAN_ID, trace.spanId());
        }
        Handle handle = null;
        if (observations != null) {
            try {
                handle = observations.start(subscription, address, properties, trace);
            } catch (RuntimeException e) {
                // A broken ObservationHandler must not fail the delivery; the handler runs unobserved.
                LOG.warn("Subscription '{}': starting the Observation failed; running the handler without it",
                        subscription, e);
            }
        }
        return new HandlerScope(trace, handle);
    }

    void failed(Throwable error) {
        if (observation != null) {
            try {
                observation.error(error);
            } catch (RuntimeException e) {
                LOG.warn("Recording a handler failure on the Observation failed", e);
            }
        }
    }

    /** Records the outcome decided for the delivery (the first one recorded wins). */
    void outcome(Outcome decided) {
        if (outcome == null) {
            outcome = decided;
        }
    }

    /** Stops the Observation and removes the MDC keys this scope set. Never throws. */
    void close() {
        try {
            if (observation != null) {
                Outcome o = outcome;
                observation.stop(o == null ? "none" : o.name().toLowerCase(Locale.ROOT));
            }
        } catch (RuntimeException e) {
            LOG.warn("Stopping the Observation failed", e);
        } finally {
            clearMdc(trace);
        }
    }

    private static void clearMdc(TraceContext trace) {
        if (trace != null) {
            MDC.remove(MDC_TRACEPARENT);
            MDC.remove(MDC_TRACESTATE);
            MDC.remove(MDC_TRACE_ID);
            MDC.remove(MDC_SPAN_ID);
        }
    }
}

package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.slf4j.MDC;

/**
 * What surrounds one handler call on its worker thread: the message's W3C trace context in the SLF4J MDC, and the
 * observer's {@link ConsumerObserver.HandlerScope} (an Observation, a span). Opened just before the handler runs;
 * closed by {@link Runner#run} on the same thread once the delivery's outcome is decided, whatever
 * happened.
 */
final class DeliveryScope {

    /** MDC key: the {@code traceparent} as received (message-annotation or application property). */
    static final String MDC_TRACEPARENT = "traceparent";
    /** MDC key: the {@code tracestate} as received, from the same section as {@code traceparent}. */
    static final String MDC_TRACESTATE = "tracestate";
    /** MDC key: the trace id parsed from {@code traceparent}. */
    static final String MDC_TRACE_ID = "traceId";
    /** MDC key: the parent (producer) span id parsed from {@code traceparent}. */
    static final String MDC_SPAN_ID = "spanId";

    private final TraceContext trace;
    private final ConsumerObserver.HandlerScope observed;

    private DeliveryScope(TraceContext trace, ConsumerObserver.HandlerScope observed) {
        this.trace = trace;
        this.observed = observed;
    }

    /**
     * @param observer a {@link SafeObserver} (never throws)
     * @return a scope, or null when there is neither trace context nor an observer scope
     */
    static DeliveryScope open(TraceContext trace, ConsumerObserver observer, String subscription, Envelope envelope,
                             String brokerProduct) {
        if (trace != null) {
            MDC.put(MDC_TRACEPARENT, trace.traceparent());
            if (trace.tracestate() != null) {
                MDC.put(MDC_TRACESTATE, trace.tracestate());
            }
            MDC.put(MDC_TRACE_ID, trace.traceId());
            MDC.put(MDC_SPAN_ID, trace.spanId());
        }
        ConsumerObserver.HandlerScope observed = observer.handlerStarting(subscription, envelope,
                brokerProduct);
        return trace == null && observed == null ? null : new DeliveryScope(trace, observed);
    }

    void failed(Throwable error) {
        if (observed != null) {
            observed.failed(error);
        }
    }

    /**
     * Closes the observer's scope and removes the MDC keys this scope set.
     *
     * @param outcome the outcome sent, enlisted or scheduled; null if the delivery was abandoned
     * @param reason why; null if the delivery was abandoned
     */
    void close(Outcome outcome, SettleReason reason) {
        try {
            if (observed != null) {
                observed.close(outcome, reason);
            }
        } finally {
            if (trace != null) {
                MDC.remove(MDC_TRACEPARENT);
                MDC.remove(MDC_TRACESTATE);
                MDC.remove(MDC_TRACE_ID);
                MDC.remove(MDC_SPAN_ID);
            }
        }
    }
}

package org.acemq.amqp.consumer.internal;

import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * W3C trace context carried in a message's message-annotations or application properties ({@code traceparent},
 * {@code tracestate}), parsed and validated per the W3C Trace Context recommendation (level 1): an invalid
 * {@code traceparent} is ignored together with its {@code tracestate}.
 *
 * @param traceparent the header value as received
 * @param tracestate the tracestate value, or null
 * @param traceId the 32-hex-digit trace id
 * @param spanId the 16-hex-digit parent (producer) span id
 */
record TraceContext(String traceparent, String tracestate, String traceId, String spanId) {

    static final String TRACEPARENT = "traceparent";
    static final String TRACESTATE = "tracestate";
    private static final int MAX_TRACESTATE = 512;

    /**
     * Reads the context as the W3C trace-context AMQP draft has readers do: from the message-annotations if they carry
     * a {@code traceparent}, else from the application properties; {@code tracestate} from the same section.
     *
     * @return the message's trace context, or null if it carries none (or an invalid one)
     */
    static TraceContext of(Message<?> message) {
        Object parent = null;
        Object state = null;
        try {
            if (message.hasAnnotations()) {
                parent = message.annotation(TRACEPARENT);
                if (parent != null) {
                    state = message.annotation(TRACESTATE);
                }
            }
            if (parent == null && message.hasProperties()) {
                parent = message.property(TRACEPARENT);
                if (parent != null) {
                    state = message.property(TRACESTATE);
                }
            }
        } catch (ClientException | RuntimeException e) {
            return null;
        }
        return parent instanceof String p ? parse(p, state instanceof String s ? s : null) : null;
    }

    /** @return the parsed context, or null if {@code traceparent} is not valid */
    static TraceContext parse(String traceparent, String tracestate) {
        String p = traceparent.trim();
        // version "-" trace-id "-" parent-id "-" flags; future versions may append "-" fields
        if (p.length() < 55 || p.charAt(2) != '-' || p.charAt(35) != '-' || p.charAt(52) != '-') {
            return null;
        }
        String version = p.substring(0, 2);
        String traceId = p.substring(3, 35);
        String spanId = p.substring(36, 52);
        String flags = p.substring(53, 55);
        if (!hex(version) || "ff".equals(version) || !hex(traceId) || !hex(spanId) || !hex(flags)
                || zeros(traceId) || zeros(spanId)) {
            return null;
        }
        if (p.length() > 55 && ("00".equals(version) || p.charAt(55) != '-')) {
            return null;
        }
        String state = tracestate == null || tracestate.isBlank() || tracestate.length() > MAX_TRACESTATE ? null
                : tracestate.trim();
        return new TraceContext(p, state, traceId, spanId);
    }

    private static boolean hex(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
                return false;
            }
        }
        return true;
    }

    private static boolean zeros(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) != '0') {
                return false;
            }
        }
        return true;
    }
}

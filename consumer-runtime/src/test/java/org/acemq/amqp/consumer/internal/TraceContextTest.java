package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Parsing of the W3C {@code traceparent} header (Trace Context level 1). */
class TraceContextTest {

    @Test
    void parsesAVersion00Header() {
        TraceContext t = TraceContext.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b");
        assertThat(t).isNotNull();
        assertThat(t.traceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(t.spanId()).isEqualTo("00f067aa0ba902b7");
        assertThat(t.tracestate()).isEqualTo("a=b");
    }

    @Test
    void acceptsAFutureVersionWithExtraFields() {
        assertThat(TraceContext.parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", null))
                .isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "",
            "garbage",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    void rejectsInvalidHeaders(String header) {
        assertThat(TraceContext.parse(header, "a=b")).isNull();
    }

    @Test
    void dropsBlankTracestate() {
        assertThat(TraceContext.parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", " ").tracestate())
                .isNull();
    }
}

package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** A consumer with credentials warns when protonj2's frame logging, which prints the SASL frames, is on. */
class FrameLoggingWarningTest {

    @Test
    void warnsOnlyWhenFramesWouldCarryCredentials() {
        assertThat(Connector.frameLoggingWarning(true, true, null))
                .contains(Connector.FRAME_LOGGER + " at TRACE").contains("password or token in clear");
        assertThat(Connector.frameLoggingWarning(true, false, "true")).contains("PN_TRACE_FRM");
        assertThat(Connector.frameLoggingWarning(true, false, "1")).isNotNull();
        assertThat(Connector.frameLoggingWarning(true, false, "YES")).isNotNull();
        assertThat(Connector.frameLoggingWarning(true, false, "false")).isNull();
        assertThat(Connector.frameLoggingWarning(true, false, null)).isNull();
        assertThat(Connector.frameLoggingWarning(false, true, "true")).as("anonymous: nothing to leak").isNull();
    }
}

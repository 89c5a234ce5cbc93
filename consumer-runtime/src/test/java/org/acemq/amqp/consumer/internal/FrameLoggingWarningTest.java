package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.junit.jupiter.api.Test;

/** A consumer with credentials warns when protonj2's frame logging, which prints the SASL frames, is on. */
class FrameLoggingWarningTest {

    @Test
    void warnsOnlyWhenFramesWouldCarryCredentials() {
        assertThat(AmqpOptions.frameLoggingWarning(true, true, null))
                .contains(ProtonInternals.FRAME_LOGGER + " at TRACE").contains("password or token in clear");
        assertThat(AmqpOptions.frameLoggingWarning(true, false, "true")).contains("PN_TRACE_FRM");
        assertThat(AmqpOptions.frameLoggingWarning(true, false, "1")).isNotNull();
        assertThat(AmqpOptions.frameLoggingWarning(true, false, "YES")).isNotNull();
        assertThat(AmqpOptions.frameLoggingWarning(true, false, "false")).isNull();
        assertThat(AmqpOptions.frameLoggingWarning(true, false, null)).isNull();
        assertThat(AmqpOptions.frameLoggingWarning(false, true, "true")).as("anonymous: nothing to leak").isNull();
    }
}

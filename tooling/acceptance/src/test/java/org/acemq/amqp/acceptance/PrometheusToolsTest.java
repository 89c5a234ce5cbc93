package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PrometheusToolsTest {

    @Test
    void aMissingProgramFailsTheCheckWithHowToInstallIt() {
        assertThatThrownBy(() -> PrometheusTools.require("acemq-no-such-prometheus"))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("acemq-no-such-prometheus not found")
                .hasMessageContaining("apt-get install -y prometheus")
                .hasMessageContaining("service prometheus stop")
                .hasMessageContaining(PrometheusTools.BIN_DIR_ENV);
    }
}

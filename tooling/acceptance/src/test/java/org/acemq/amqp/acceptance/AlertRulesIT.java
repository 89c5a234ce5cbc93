package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The alert rules pass {@code promtool check rules} and their unit tests ({@code promtool test rules}); promtool is
 * found by {@link PrometheusTools} (environment variable, then Docker, then the local package).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class AlertRulesIT {

    @Test
    void promtoolAcceptsTheRules() {
        Path rules = Project.file(Monitoring.ALERTS);
        PrometheusTools.Run run = PrometheusTools.promtool(rules.getParent(), "check", "rules",
                rules.getFileName().toString());
        System.out.println("promtool (" + PrometheusTools.choice() + "):\n" + run.output());
        assertThat(run.exitCode()).as(run.output()).isZero();
        assertThat(run.output()).contains("SUCCESS: " + Monitoring.alertNames().size() + " rules found");
    }

    @Test
    void theAlertsUnitTestsPass() {
        Path tests = Project.file(Monitoring.ALERT_TESTS);
        PrometheusTools.Run run = PrometheusTools.promtool(tests.getParent(), "test", "rules",
                tests.getFileName().toString());
        System.out.println("promtool (" + PrometheusTools.choice() + "):\n" + run.output());
        assertThat(run.exitCode()).as(run.output()).isZero();
        assertThat(run.output()).contains("SUCCESS");
    }
}

package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.acemq.amqp.acceptance.PrometheusTools.Choice;
import org.acemq.amqp.acceptance.PrometheusTools.Source;
import org.junit.jupiter.api.Test;

/**
 * The order in which {@link PrometheusTools} looks for Prometheus, with a fake environment: the variables, whether a
 * Docker daemon answers and which files are executable are passed in (no Docker engine runs here).
 */
class PrometheusToolsTest {

    private static final Predicate<Path> LOCAL_PACKAGE = executables("/usr/bin/prometheus", "/usr/bin/promtool");
    private static final Predicate<Path> BIN_DIR_AND_LOCAL = executables("/opt/prom/prometheus", "/opt/prom/promtool",
            "/usr/bin/prometheus", "/usr/bin/promtool");
    private static final Predicate<Path> NOTHING = p -> false;

    private final AtomicInteger dockerAsked = new AtomicInteger();

    private BooleanSupplier docker(boolean available) {
        return () -> {
            dockerAsked.incrementAndGet();
            return available;
        };
    }

    @Test
    void theEnvironmentVariableComesFirstWithoutAskingDocker() {
        Choice c = PrometheusTools.choose(Map.of(PrometheusTools.BIN_DIR_ENV, "/opt/prom"), null, docker(true),
                BIN_DIR_AND_LOCAL);
        assertThat(c.source()).isEqualTo(Source.ENVIRONMENT);
        assertThat(c.programs()).containsEntry("prometheus", Path.of("/opt/prom/prometheus"))
                .containsEntry("promtool", Path.of("/opt/prom/promtool"));
        assertThat(dockerAsked).hasValue(0);
    }

    @Test
    void dockerComesBeforeTheLocalPackage() {
        Choice c = PrometheusTools.choose(Map.of("PATH", "/usr/bin"), null, docker(true), LOCAL_PACKAGE);
        assertThat(c.source()).isEqualTo(Source.TESTCONTAINERS);
        assertThat(c.programs()).isEmpty();
        assertThat(c.toString()).contains(PrometheusTools.DOCKER_IMAGE);
    }

    @Test
    void withoutDockerTheLocalPackageIsUsed() {
        Choice c = PrometheusTools.choose(Map.of("PATH", "/nowhere"), null, docker(false), LOCAL_PACKAGE);
        assertThat(c.source()).isEqualTo(Source.LOCAL_PACKAGE);
        assertThat(c.programs()).containsEntry("prometheus", Path.of("/usr/bin/prometheus"))
                .containsEntry("promtool", Path.of("/usr/bin/promtool"));
        assertThat(dockerAsked).hasValue(1);
    }

    @Test
    void theLocalPackageIsLookedForOnThePathFirst() {
        Choice c = PrometheusTools.choose(Map.of("PATH", "/opt/prom:/usr/bin"), null, docker(false),
                BIN_DIR_AND_LOCAL);
        assertThat(c.programs()).containsEntry("prometheus", Path.of("/opt/prom/prometheus"));
    }

    @Test
    void aSetVariableWithoutTheProgramsFailsInsteadOfFallingBack() {
        assertThatThrownBy(() -> PrometheusTools.choose(Map.of(PrometheusTools.BIN_DIR_ENV, "/opt/empty"), null,
                docker(true), LOCAL_PACKAGE))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining(PrometheusTools.BIN_DIR_ENV + "=/opt/empty is set")
                .hasMessageContaining("/opt/empty/prometheus is not an executable file");
        assertThat(dockerAsked).hasValue(0);
    }

    @Test
    void nothingFoundFailsWithWhatWasTriedAndHowToProvideOneInOrder() {
        assertThatThrownBy(() -> PrometheusTools.choose(Map.of("PATH", "/nowhere"), null, docker(false), NOTHING))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("No Prometheus for the monitoring checks (mode auto)")
                .hasMessageContaining(PrometheusTools.BIN_DIR_ENV + ": not set")
                .hasMessageContaining("Testcontainers: no Docker environment available")
                .hasMessageContaining("local package: prometheus and promtool not found")
                .hasMessageContaining("apt-get install -y prometheus")
                .hasMessageContaining("service prometheus stop")
                .hasMessageContaining(PrometheusTools.DOCKER_IMAGE)
                .hasMessageContaining(PrometheusTools.MODE_PROPERTY);
        assertThat(PrometheusTools.HOW_TO.indexOf(PrometheusTools.BIN_DIR_ENV))
                .isLessThan(PrometheusTools.HOW_TO.indexOf(PrometheusTools.DOCKER_IMAGE));
        assertThat(PrometheusTools.HOW_TO.indexOf(PrometheusTools.DOCKER_IMAGE))
                .isLessThan(PrometheusTools.HOW_TO.indexOf("apt-get install"));
    }

    @Test
    void aForcedModeUsesThatOptionOnly() {
        assertThat(PrometheusTools.choose(Map.of(PrometheusTools.MODE_ENV, "local"), null, docker(true),
                LOCAL_PACKAGE).source()).isEqualTo(Source.LOCAL_PACKAGE);
        assertThat(dockerAsked).hasValue(0);
        // the system property wins over the variable
        assertThat(PrometheusTools.choose(Map.of(PrometheusTools.MODE_ENV, "local"), "testcontainers", docker(true),
                LOCAL_PACKAGE).source()).isEqualTo(Source.TESTCONTAINERS);
        assertThatThrownBy(() -> PrometheusTools.choose(Map.of(), "testcontainers", docker(false), LOCAL_PACKAGE))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("mode testcontainers")
                .hasMessageContaining("no Docker environment available");
        assertThatThrownBy(() -> PrometheusTools.choose(Map.of(), "env", docker(true), LOCAL_PACKAGE))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining(PrometheusTools.BIN_DIR_ENV + ": not set");
        assertThatThrownBy(() -> PrometheusTools.choose(Map.of(), "podman", docker(true), LOCAL_PACKAGE))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("must be one of auto, env, testcontainers, local, but was 'podman'");
    }

    @Test
    void theConfigurationScrapesEveryJobAtTheGivenHost() {
        String yaml = PrometheusTools.config("/etc/prometheus/acemq-rules.yml", "host.testcontainers.internal",
                new java.util.LinkedHashMap<>(Map.of("acemq-sample", 9464)));
        assertThat(yaml).contains("  - /etc/prometheus/acemq-rules.yml",
                "  - job_name: acemq-sample", "      - targets: ['host.testcontainers.internal:9464']",
                "scrape_interval: 1s");
    }

    @Test
    void theMonitoringGuideDocumentsTheSameOrderAndImage() {
        String doc = Project.read("docs/monitoring.md");
        int env = doc.indexOf("1. `" + PrometheusTools.BIN_DIR_ENV + "`");
        int docker = doc.indexOf("2. Docker");
        int local = doc.indexOf("3. The local package");
        assertThat(env).isNotNegative();
        assertThat(docker).isGreaterThan(env);
        assertThat(local).isGreaterThan(docker);
        assertThat(doc).contains("`" + PrometheusTools.DOCKER_IMAGE + "`", "-D" + PrometheusTools.MODE_PROPERTY + "=",
                PrometheusTools.MODE_ENV);
    }

    private static Predicate<Path> executables(String... paths) {
        Set<Path> set = java.util.Arrays.stream(paths).map(Path::of).collect(java.util.stream.Collectors.toSet());
        return set::contains;
    }
}

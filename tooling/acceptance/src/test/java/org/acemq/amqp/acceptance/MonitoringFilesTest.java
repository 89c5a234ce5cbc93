package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.micrometer.AcemqMeter;
import org.junit.jupiter.api.Test;

/**
 * The dashboard and the alert rules name only meters that exist, under the names Prometheus really gives them, with
 * tags those meters have and tag values the runtime uses; the dashboard shows every meter; every alert is documented
 * and unit-tested.
 */
class MonitoringFilesTest {

    private static final Pattern SERIES = Pattern.compile("\\bacemq_[a-z_]+\\b");
    private static final Pattern SELECTOR = Pattern.compile("\\b(acemq_[a-z_]+)\\s*\\{([^}]*)}");
    private static final Pattern MATCHER = Pattern.compile("(\\w+)\\s*(=~|!~|!=|=)\\s*\"([^\"]*)\"");
    /** Labels Prometheus adds (job, instance) and the histogram bucket bound. */
    private static final Set<String> PROMETHEUS_LABELS = Set.of("job", "instance", "le");

    @Test
    void everySeriesTheDashboardAndTheRulesNameIsTheRealPrometheusNameOfAnAcemqMeter() {
        Map<String, AcemqMeter> known = PrometheusNames.seriesNames();
        assertThat(known).containsKeys("acemq_consumer_deliveries_total", "acemq_store_operation_duration_seconds_bucket",
                "acemq_consumer_claim_oldest_age_seconds", "acemq_consumer_connected");
        List<String> unknown = new ArrayList<>();
        for (String file : List.of(Monitoring.DASHBOARD, Monitoring.ALERTS, Monitoring.ALERT_TESTS)) {
            Matcher m = SERIES.matcher(Project.read(file));
            while (m.find()) {
                if (!known.containsKey(m.group())) {
                    unknown.add(file + ": " + m.group());
                }
            }
        }
        assertThat(unknown).as("names that are no series of an AcemqMeter; the real ones are %s", known.keySet())
                .isEmpty();
    }

    @Test
    void selectorsUseOnlyTheMetersTagsAndValuesTheRuntimeProduces() {
        Map<String, AcemqMeter> known = PrometheusNames.seriesNames();
        Map<String, Set<String>> values = Map.of(
                AcemqMeter.TagKey.OUTCOME, lower(Outcome.class),
                AcemqMeter.TagKey.REASON, lower(SettleReason.class),
                AcemqMeter.TagKey.RESULT, Stream.of(lower(ClaimResult.class).stream(), lower(SendResult.class).stream(),
                        Stream.of("error", "success", "failure")).flatMap(x -> x).collect(Collectors.toSet()),
                AcemqMeter.TagKey.OPERATION, lower(StoreOperation.class),
                AcemqMeter.TagKey.PATH, lower(SendPath.class));
        List<String> problems = new ArrayList<>();
        for (String file : List.of(Monitoring.DASHBOARD, Monitoring.ALERTS)) {
            Matcher s = SELECTOR.matcher(Project.read(file).replace("\\\"", "\""));
            while (s.find()) {
                AcemqMeter meter = known.get(s.group(1));
                if (meter == null) {
                    continue; // reported by the test above
                }
                Matcher l = MATCHER.matcher(s.group(2));
                while (l.find()) {
                    String label = l.group(1);
                    if (PROMETHEUS_LABELS.contains(label)) {
                        continue;
                    }
                    if (!meter.tagKeys().contains(label)) {
                        problems.add(file + ": " + s.group(1) + " has no tag " + label + " (tags: " + meter.tagKeys()
                                + ")");
                    } else if (l.group(2).equals("=") || l.group(2).equals("!=")) {
                        Set<String> allowed = values.get(label);
                        if (allowed != null && !allowed.contains(l.group(3))) {
                            problems.add(file + ": " + s.group(1) + "{" + label + "=\"" + l.group(3) + "\"}: not a "
                                    + "value of " + label + " (" + new TreeSet<>(allowed) + ")");
                        }
                    }
                }
            }
        }
        assertThat(problems).isEmpty();
    }

    @Test
    void theDashboardShowsEveryMeter() {
        Map<String, AcemqMeter> known = PrometheusNames.seriesNames();
        Set<AcemqMeter> shown = EnumSet.noneOf(AcemqMeter.class);
        for (Monitoring.Query q : Monitoring.queries()) {
            Matcher m = SERIES.matcher(q.expr());
            while (m.find()) {
                if (known.containsKey(m.group())) {
                    shown.add(known.get(m.group()));
                }
            }
        }
        Set<AcemqMeter> missing = EnumSet.allOf(AcemqMeter.class);
        missing.removeAll(shown);
        assertThat(missing).as("meters without a panel in %s", Monitoring.DASHBOARD).isEmpty();
    }

    @Test
    void theDashboardsQueriesAreCompleteAndUseOnlyItsOwnVariables() {
        List<Monitoring.Query> queries = Monitoring.queries();
        assertThat(queries).hasSizeGreaterThanOrEqualTo(20);
        for (Monitoring.Query q : queries) {
            assertThat(q.expr()).as(q.panel()).isNotBlank().doesNotContain("null");
            Monitoring.resolve(q.expr(), "4s"); // throws on an unknown variable
        }
        assertThat(Monitoring.variableQueries()).allSatisfy(v -> assertThat(v).startsWith("label_values("));
    }

    @Test
    void everyAlertIsDocumentedAndHasAUnitTestWhereItFires() {
        List<String> alerts = Monitoring.alertNames();
        assertThat(alerts).hasSizeGreaterThanOrEqualTo(10).doesNotHaveDuplicates();
        String doc = Project.read("docs/monitoring.md");
        String tests = Project.read(Monitoring.ALERT_TESTS);
        List<String> problems = new ArrayList<>();
        for (String alert : alerts) {
            if (!Pattern.compile("(?m)^###? " + alert + "\\s*$").matcher(doc).find()) {
                problems.add(alert + ": no '### " + alert + "' section in docs/monitoring.md");
            }
            if (!Pattern.compile("alertname: " + alert + "\\s*\\n\\s*exp_alerts:\\s*\\n\\s*- exp_labels")
                    .matcher(tests).find()) {
                problems.add(alert + ": no case in " + Monitoring.ALERT_TESTS + " where it fires");
            }
            if (!Pattern.compile("alertname: " + alert + "\\s*\\n\\s*exp_alerts: \\[]").matcher(tests).find()) {
                problems.add(alert + ": no case in " + Monitoring.ALERT_TESTS + " where it stays quiet");
            }
            if (!Project.read(Monitoring.ALERTS).contains("docs/monitoring.md#" + alert.toLowerCase(Locale.ROOT))) {
                problems.add(alert + ": its description does not point to docs/monitoring.md#"
                        + alert.toLowerCase(Locale.ROOT));
            }
        }
        assertThat(problems).isEmpty();
    }

    private static <E extends Enum<E>> Set<String> lower(Class<E> type) {
        return EnumSet.allOf(type).stream().map(e -> e.name().toLowerCase(Locale.ROOT)).collect(Collectors.toSet());
    }
}

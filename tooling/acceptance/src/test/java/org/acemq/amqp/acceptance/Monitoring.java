package org.acemq.amqp.acceptance;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The files under monitoring/: the Grafana dashboard's queries and the Prometheus alert rules. */
final class Monitoring {

    static final String DASHBOARD = "monitoring/grafana/acemq-consumer-dashboard.json";
    static final String ALERTS = "monitoring/prometheus/acemq-consumer-alerts.yml";
    static final String ALERT_TESTS = "monitoring/prometheus/acemq-consumer-alerts.test.yml";

    /**
     * One query of the dashboard.
     *
     * @param panel the panel's title
     * @param refId the target's refId
     * @param expr the PromQL, with Grafana's variables
     * @param legend the legend format
     * @param instant whether Grafana runs it as an instant query (stat panels)
     */
    record Query(String panel, String refId, String expr, String legend, boolean instant) {
    }

    private Monitoring() {
    }

    static Map<String, Object> dashboard() {
        return Json.object(Json.parse(Project.read(DASHBOARD)));
    }

    /** @return every target of every panel (rows included, nested panels of collapsed rows too) */
    static List<Query> queries() {
        List<Query> queries = new ArrayList<>();
        collect(Json.array(dashboard().get("panels")), queries);
        return queries;
    }

    private static void collect(List<Object> panels, List<Query> into) {
        for (Object p : panels) {
            Map<String, Object> panel = Json.object(p);
            collect(Json.array(panel.get("panels")), into);
            for (Object t : Json.array(panel.get("targets"))) {
                Map<String, Object> target = Json.object(t);
                into.add(new Query(String.valueOf(panel.get("title")), String.valueOf(target.get("refId")),
                        String.valueOf(target.get("expr")), String.valueOf(target.getOrDefault("legendFormat", "")),
                        Boolean.TRUE.equals(target.get("instant"))));
            }
        }
    }

    /** @return the queries of the dashboard's template variables ({@code label_values(...)}) */
    static List<String> variableQueries() {
        List<String> result = new ArrayList<>();
        Map<String, Object> templating = Json.object(dashboard().get("templating"));
        for (Object v : Json.array(templating.get("list"))) {
            Map<String, Object> variable = Json.object(v);
            if ("query".equals(variable.get("type"))) {
                Object query = variable.get("query");
                result.add(query instanceof Map<?, ?> m ? String.valueOf(m.get("query")) : String.valueOf(query));
            }
        }
        return result;
    }

    /**
     * Replaces Grafana's variables the way a dashboard showing everything would: the template variables by
     * {@code .*} (their "All" value), {@code $__rate_interval} by the given range.
     *
     * @param expr a query of the dashboard
     * @param rateInterval what Grafana would compute for {@code $__rate_interval}, e.g. {@code 4s}
     * @return PromQL Prometheus accepts
     */
    static String resolve(String expr, String rateInterval) {
        String resolved = expr.replace("$__rate_interval", rateInterval)
                .replace("$job", ".*").replace("$instance", ".*").replace("$subscription", ".*");
        if (resolved.contains("$")) {
            throw new IllegalStateException("unresolved Grafana variable in " + expr);
        }
        return resolved;
    }

    /** @return the alert names of the rules file, in order */
    static List<String> alertNames() {
        List<String> names = new ArrayList<>();
        for (String line : Project.read(ALERTS).split("\\R")) {
            String t = line.strip();
            if (t.startsWith("- alert:")) {
                names.add(t.substring("- alert:".length()).strip());
            }
        }
        return names;
    }
}

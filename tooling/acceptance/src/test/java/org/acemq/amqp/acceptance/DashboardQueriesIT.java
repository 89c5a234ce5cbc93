package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.acemq.amqp.samples.OrdersDemo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every query of the Grafana dashboard returns data from a real Prometheus (found by {@link PrometheusTools}: the
 * programs of {@value PrometheusTools#BIN_DIR_ENV}, else {@value PrometheusTools#DOCKER_IMAGE} through Testcontainers
 * where Docker runs, else the local package; its own configuration and data directory) that scraped a real run of the
 * sample (OrdersDemo with {@code --prometheus-port}: embedded Artemis, in-memory store, duplicates, transient
 * failures and poison messages).
 *
 * <p>The sample runs 2,000 orders with 5 ms of simulated handler work on 2 threads, so that consuming lasts several
 * scrape intervals on any machine. Each target is run the way Grafana runs it over the run's time range: range
 * queries with a 1 s step and {@code $__rate_interval} = 4 s (four scrape intervals), instant queries (stat panels)
 * at the end of the run; the template variables take their "All" value. A query returns data when at least one series
 * has a finite value. The same Prometheus loads the alert rules; every rule must evaluate without error. The answers are printed.
 *
 * <p>The sample drains its queue before it stops, so it releases nothing at shutdown. A second run ({@link ShutdownRun},
 * job {@code acemq-shutdown}) closes its consumer while deliveries are claimed ahead; Prometheus must then hold the
 * released-at-shutdown count that run reported, and the "Deliveries by reason" panel a {@code shutdown} series.
 */
class DashboardQueriesIT {

    private static final String RATE_INTERVAL = "4s";
    private static final Pattern LABEL_VALUES = Pattern.compile("label_values\\((.*),\\s*(\\w+)\\)");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private String baseUrl;

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void everyDashboardQueryReturnsDataFromAPrometheusThatScrapedARunOfTheSample(@TempDir Path dir) throws Exception {
        int metricsPort = PrometheusTools.freePort();
        int shutdownPort = PrometheusTools.freePort();
        Map<String, Integer> jobs = new LinkedHashMap<>();
        jobs.put("acemq-sample", metricsPort);
        jobs.put("acemq-shutdown", shutdownPort);
        try (PrometheusTools.Server prometheus = PrometheusTools.start(dir, Project.file(Monitoring.ALERTS), jobs)) {
            baseUrl = prometheus.baseUrl();

            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            Instant start = Instant.now();
            // 2,000 orders at 5 ms of handler work on 2 threads: consuming takes 5 s or more on any machine, so that
            // the 1 s scrapes see the counters and histograms move (a run between two scrapes would show no rates)
            int status = OrdersDemo.run(new String[] {"--messages", "2000", "--concurrency", "2", "--work", "5",
                    "--prometheus-port", String.valueOf(metricsPort), "--prometheus-hold", "6", "--timeout", "300"},
                    print(out), print(err), false);
            Instant end = Instant.now();
            String demo = out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
            assertThat(status).as(demo).isEqualTo(OrdersDemo.EXIT_PASS);
            assertThat(demo).contains("serving metrics for Prometheus at http://127.0.0.1:" + metricsPort + "/metrics");
            Instant instantAt = end.minusSeconds(2); // inside the 6 s the demo kept serving its final values

            List<String> report = new ArrayList<>();
            List<String> noData = new ArrayList<>();
            report.add(String.format(Locale.ROOT, "%-30s %-3s %6s  %s", "panel", "ref", "series", "answer"));
            for (Monitoring.Query q : Monitoring.queries()) {
                String promql = Monitoring.resolve(q.expr(), RATE_INTERVAL);
                Answer a = q.instant() ? query(promql, instantAt) : queryRange(promql, start, end);
                report.add(String.format(Locale.ROOT, "%-30s %-3s %6d  %s", q.panel(), q.refId(), a.series(),
                        a.summary()));
                if (!a.hasData()) {
                    noData.add(q.panel() + " [" + q.refId() + "] " + promql + " -> " + a.raw());
                }
            }
            for (String variable : Monitoring.variableQueries()) {
                Matcher m = LABEL_VALUES.matcher(variable);
                assertThat(m.matches()).as(variable).isTrue();
                String selector = m.group(1).replace("$job", ".*").replace("$instance", ".*");
                List<Object> values = Json.array(get("/api/v1/label/" + m.group(2) + "/values?match[]="
                        + encode(selector) + "&start=" + start.getEpochSecond() + "&end=" + end.getEpochSecond())
                        .get("data"));
                report.add(String.format(Locale.ROOT, "%-30s %-3s %6d  %s", "variable " + m.group(2), "", values.size(),
                        values));
                if (values.isEmpty()) {
                    noData.add("variable " + variable);
                }
            }
            List<String> ruleProblems = new ArrayList<>();
            int rules = 0;
            Map<String, Object> data = Json.object(get("/api/v1/rules").get("data"));
            for (Object g : Json.array(data.get("groups"))) {
                for (Object r : Json.array(Json.object(g).get("rules"))) {
                    Map<String, Object> rule = Json.object(r);
                    rules++;
                    if (!"ok".equals(rule.get("health"))) {
                        ruleProblems.add(rule.get("name") + ": " + rule.get("health") + " " + rule.get("lastError"));
                    }
                }
            }
            List<Object> alerts = Json.array(Json.object(get("/api/v1/alerts").get("data")).get("alerts"));
            report.add("alert rules loaded: " + rules + ", evaluated without error: " + (rules - ruleProblems.size())
                    + "; active now: " + alerts.stream().map(a -> Json.object(Json.object(a).get("labels"))
                    .get("alertname") + " (" + Json.object(a).get("state") + ")").toList());

            System.out.println("Dashboard queries against Prometheus (" + prometheus.description()
                    + ") after a run of the sample:\n"
                    + String.join("\n", report));
            assertThat(noData).as("dashboard queries without data").isEmpty();
            assertThat(rules).isEqualTo(Monitoring.alertNames().size());
            assertThat(ruleProblems).isEmpty();

            shutdownReleasesReachPrometheus(shutdownPort);
        }
    }

    /**
     * A second run, scraped as job {@code acemq-shutdown}, ends with deliveries claimed ahead and released at shutdown;
     * Prometheus scrapes the final count, and the dashboard's "Deliveries by reason" shows a {@code shutdown} series.
     */
    private void shutdownReleasesReachPrometheus(int port) throws Exception {
        Instant start = Instant.now();
        try (ShutdownRun run = ShutdownRun.serve(port)) {
            double released = run.run();
            assertThat(released).isPositive();
            String counter = "sum(acemq_consumer_deliveries_total{job=\"acemq-shutdown\", outcome=\"released\", "
                    + "reason=\"shutdown\"})";
            await("Prometheus scrapes " + released + " deliveries released at shutdown").atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(500))
                    .until(() -> valueNow(counter) == released);
            Monitoring.Query byReason = Monitoring.queries().stream()
                    .filter(q -> q.panel().equals("Deliveries by reason")).findFirst().orElseThrow();
            String promql = Monitoring.resolve(byReason.expr(), RATE_INTERVAL);
            await("\"Deliveries by reason\" has a shutdown series").atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(500))
                    .until(() -> reasons(promql, start).contains("shutdown"));
            System.out.println("Deliveries released at shutdown, as Prometheus scraped them: " + counter + " = "
                    + valueNow(counter) + "; \"" + byReason.panel() + "\" since that run: " + reasons(promql, start));
        }
    }

    /** @return the {@code reason} label of every series a range query returns from {@code start} to now */
    private List<Object> reasons(String promql, Instant start) throws IOException, InterruptedException {
        List<Object> result = Json.array(Json.object(get("/api/v1/query_range?query=" + encode(promql) + "&start="
                + start.getEpochSecond() + "&end=" + (Instant.now().getEpochSecond() + 1) + "&step=1").get("data"))
                .get("result"));
        return result.stream().map(r -> Json.object(Json.object(r).get("metric")).get("reason")).toList();
    }

    /** @return the value of a one-series instant query now, or NaN without a series */
    private double valueNow(String promql) throws IOException, InterruptedException {
        List<Object> result = Json.array(Json.object(get("/api/v1/query?query=" + encode(promql)).get("data"))
                .get("result"));
        return result.isEmpty() ? Double.NaN
                : Double.parseDouble(String.valueOf(Json.array(Json.object(result.get(0)).get("value")).get(1)));
    }

    /** A query's answer: series with at least one value, and a short description of the values. */
    record Answer(int series, boolean hasData, String summary, String raw) {
    }

    private Answer query(String promql, Instant at) throws IOException, InterruptedException {
        return answer(get("/api/v1/query?query=" + encode(promql) + "&time=" + at.getEpochSecond()));
    }

    private Answer queryRange(String promql, Instant start, Instant end) throws IOException, InterruptedException {
        return answer(get("/api/v1/query_range?query=" + encode(promql) + "&start=" + start.getEpochSecond()
                + "&end=" + (end.getEpochSecond() + 1) + "&step=1"));
    }

    private static Answer answer(Map<String, Object> response) {
        Map<String, Object> data = Json.object(response.get("data"));
        List<Object> result = Json.array(data.get("result"));
        boolean finite = false;
        double max = Double.NEGATIVE_INFINITY;
        String maxSeries = "";
        for (Object s : result) {
            Map<String, Object> series = Json.object(s);
            List<Object> samples = series.containsKey("values") ? Json.array(series.get("values"))
                    : List.of(series.get("value"));
            for (Object sample : samples) {
                double v = Double.parseDouble(String.valueOf(Json.array(sample).get(1)));
                if (Double.isFinite(v)) {
                    finite = true;
                    if (v > max) {
                        max = v;
                        maxSeries = String.valueOf(series.get("metric"));
                    }
                }
            }
        }
        String summary = finite ? String.format(Locale.ROOT, "%s %.4g %s", data.get("resultType").equals("vector")
                ? "value" : "max", max, maxSeries) : "no finite value";
        String raw = String.valueOf(result);
        return new Answer(result.size(), finite, summary, raw.length() > 300 ? raw.substring(0, 300) + "..." : raw);
    }

    private Map<String, Object> get(String pathAndQuery) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(baseUrl + pathAndQuery))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("%s -> %s", pathAndQuery, r.body()).isEqualTo(200);
        Map<String, Object> body = Json.object(Json.parse(r.body()));
        assertThat(body.get("status")).as(r.body()).isEqualTo("success");
        return body;
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static PrintStream print(ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }
}

package org.acemq.amqp.samples.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/** The sample as a user runs it: PASS, and health and Prometheus over HTTP while it runs. */
@Timeout(240)
class OrdersApplicationIT {

    static HttpResponse<String> get(int port, String path) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void passesAndServesHealthAndPrometheusWhileItRuns() throws Exception {
        try (ConfigurableApplicationContext app = SpringApplication.run(OrdersApplication.class,
                "--demo.orders=400", "--demo.stay-up=-1")) {
            OrdersDemo.Verdict verdict = app.getBean(OrdersDemo.class).verdict().get(120, TimeUnit.SECONDS);
            assertThat(verdict.pass()).as(verdict.toString()).isTrue();
            assertThat(verdict.exactlyOnce()).isEqualTo(395);
            assertThat(verdict.duplicates()).isEqualTo(20);
            assertThat(verdict.inDlq()).isEqualTo(5);

            int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
            HttpResponse<String> health = get(port, "/actuator/health");
            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"acemq\":{").contains("\"status\":\"UP\"")
                    .contains("\"subscriptions\":{\"orders\":{");
            HttpResponse<String> prometheus = get(port, "/actuator/prometheus");
            assertThat(prometheus.statusCode()).isEqualTo(200);
            assertThat(prometheus.body())
                    // the starter tags every meter with its connection (`default` with one connection)
                    .contains("acemq_consumer_deliveries_total{connection=\"default\",outcome=\"accepted\","
                            + "reason=\"duplicate\",subscription=\"orders\"} 20.0")
                    .contains("acemq_consumer_poison_total{connection=\"default\",subscription=\"orders\"} 5.0")
                    .contains("acemq_consumer_connected{connection=\"default\"} 1.0");
        }
    }

    /** The one-command run (as main() runs it, without System.exit) on the postgres profile: exit status 0. */
    @Test
    void theOneCommandRunPassesOnThePostgresProfile() throws Exception {
        try (PostgresSchema schema = PostgresProvider.shared().newSchema("bootsample")) {
            List<String> args = new ArrayList<>(List.of("--demo.orders=300", "--demo.stay-up=0",
                    "--spring.profiles.active=postgres", "--spring.datasource.url=" + schema.jdbcUrl()));
            if (schema.user() != null) {
                args.add("--spring.datasource.username=" + schema.user());
            }
            if (schema.password() != null) {
                args.add("--spring.datasource.password=" + schema.password());
            }
            assertThat(OrdersApplication.run(args.toArray(String[]::new))).as("exit status").isZero();
            Integer confirmed = new org.springframework.jdbc.core.JdbcTemplate(schema.dataSource()).queryForObject(
                    "SELECT count(*) FROM acemq_idempotency WHERE state = 1", Integer.class);
            assertThat(confirmed).as("every healthy order confirmed in PostgreSQL").isEqualTo(295);
        }
    }
}

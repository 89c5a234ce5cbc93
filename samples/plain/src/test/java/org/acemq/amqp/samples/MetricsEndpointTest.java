package org.acemq.amqp.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MetricsEndpointTest {

    @Test
    void servesTheAcemqMetersInThePrometheusTextFormatWithHistogramsForTheDashboardQuantiles() throws Exception {
        try (MetricsEndpoint endpoint = MetricsEndpoint.start(0)) {
            MicrometerObserver observer = MicrometerObserver.of(endpoint.registry());
            observer.settled("orders", Outcome.ACCEPTED, SettleReason.PROCESSED);
            observer.storeCall(StoreOperation.CLAIM, 2_000_000, true);

            HttpResponse<String> response = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(endpoint.url())).timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(endpoint.url()).isEqualTo("http://127.0.0.1:" + endpoint.port() + "/metrics");
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(
                    v -> assertThat(v).startsWith("text/plain; version=0.0.4"));
            assertThat(response.body())
                    .contains("acemq_consumer_deliveries_total{outcome=\"accepted\",reason=\"processed\","
                            + "subscription=\"orders\"} 1.0")
                    .contains("acemq_store_operation_duration_seconds_bucket{operation=\"claim\",result=\"success\"")
                    .contains("acemq_store_errors_total{operation=\"claim\"} 0.0");
        }
    }

    @Test
    void aTakenPortIsReportedWithThePort() {
        try (MetricsEndpoint first = MetricsEndpoint.start(0)) {
            assertThatThrownBy(() -> MetricsEndpoint.start(first.port()))
                    .isInstanceOf(UncheckedIOException.class)
                    .hasMessageStartingWith("cannot serve metrics on 127.0.0.1:" + first.port());
        }
    }
}

package org.acemq.amqp.samples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.acemq.amqp.consumer.micrometer.AcemqMeter;

/**
 * {@code --prometheus-port}: a Micrometer {@link PrometheusMeterRegistry} and a plain JDK HTTP server that serves it
 * at {@code http://127.0.0.1:<port>/metrics} in the Prometheus text format, which is all an application without a
 * web framework needs (with Spring Boot, Actuator's {@code /actuator/prometheus} does this).
 *
 * <p>The registry publishes histogram buckets for the handler and store timers, so that the dashboard's latency
 * quantiles ({@code histogram_quantile} over {@code _bucket}) have data; that is the one setting an application must
 * copy to get those panels.
 */
final class MetricsEndpoint implements AutoCloseable {

    /** The timers the dashboard shows quantiles of. */
    static final Set<String> HISTOGRAM_TIMERS = Set.of(AcemqMeter.HANDLER_DURATION.meterName(),
            AcemqMeter.STORE_OPERATION_DURATION.meterName());

    private final PrometheusMeterRegistry registry;
    private final HttpServer server;
    private final ExecutorService executor;

    private MetricsEndpoint(PrometheusMeterRegistry registry, HttpServer server, ExecutorService executor) {
        this.registry = registry;
        this.server = server;
        this.executor = executor;
    }

    /**
     * @param port the port on 127.0.0.1; 0 for any free port
     * @return a serving endpoint with an empty registry
     * @throws UncheckedIOException if the port cannot be bound
     */
    static MetricsEndpoint start(int port) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        // before any meter exists: filters apply to meters registered after them
        registry.config().meterFilter(new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                return HISTOGRAM_TIMERS.contains(id.getName())
                        ? DistributionStatisticConfig.builder().percentilesHistogram(true).build().merge(config)
                        : config;
            }
        });
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        } catch (IOException e) {
            registry.close();
            throw new UncheckedIOException("cannot serve metrics on 127.0.0.1:" + port + ": " + e.getMessage(), e);
        }
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "orders-demo-metrics");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/metrics", exchange -> scrape(registry, exchange));
        server.start();
        return new MetricsEndpoint(registry, server, executor);
    }

    private static void scrape(PrometheusMeterRegistry registry, HttpExchange exchange) throws IOException {
        try (exchange) {
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    /** @return the registry the demo's {@code MicrometerObserver} registers its meters in */
    PrometheusMeterRegistry registry() {
        return registry;
    }

    /** @return the bound port */
    int port() {
        return server.getAddress().getPort();
    }

    /** @return {@code http://127.0.0.1:<port>/metrics} */
    String url() {
        return "http://127.0.0.1:" + port() + "/metrics";
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
        registry.close();
    }
}

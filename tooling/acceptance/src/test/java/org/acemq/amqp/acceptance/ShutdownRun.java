package org.acemq.amqp.acceptance;

import static org.acemq.amqp.testsupport.AmqpTestClient.message;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.Counter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;

/**
 * A short consumer run that ends while deliveries are claimed ahead, so that they are released at shutdown
 * ({@code acemq_consumer_deliveries_total{outcome="released",reason="shutdown"}}), with its meters served for
 * Prometheus at {@code http://127.0.0.1:<port>/metrics} until {@link #close()}. The sample (OrdersDemo) drains its
 * queue before it closes, so it never has any.
 *
 * <p>The scenario: one handler thread; a warm-up of 20 quick messages (with a ticker that stands still, so that the
 * intake sees no handler time and claims ahead in batches); a gate message that blocks the thread; six more messages,
 * claimed in one batch with the first of them, which blocks in its turn; then the consumer closes and releases the
 * claimed five that no thread started.
 */
final class ShutdownRun implements AutoCloseable {

    static final String SUBSCRIPTION = "shutdown-check";

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final HttpServer server;

    private ShutdownRun(int port) {
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        } catch (IOException e) {
            registry.close();
            throw new UncheckedIOException(e);
        }
        server.createContext("/metrics", exchange -> {
            try (exchange) {
                byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                exchange.sendResponseHeaders(200, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        });
        server.start();
    }

    /** @param port the port of 127.0.0.1 to serve the meters on */
    static ShutdownRun serve(int port) {
        return new ShutdownRun(port);
    }

    /**
     * Runs the scenario to the end (the consumer closed).
     *
     * @return how many deliveries the consumer counted as released at shutdown (at least one)
     */
    double run() throws Exception {
        String queue = "acemq-shutdown-check";
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch slow = new CountDownLatch(1);
        AtomicInteger slowStarted = new AtomicInteger();
        try (EmbeddedArtemis broker = EmbeddedArtemis.builder().persistent(false).maxDeliveryAttempts(20).build()
                .start();
             AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Subscription subscription = Subscription.builder(queue, e -> {
                String body = e.body(String.class);
                if (body.equals("gate")) {
                    gate.await();
                } else if (body.startsWith("m-")) {
                    slowStarted.incrementAndGet();
                    slow.await();
                }
            }).name(SUBSCRIPTION).concurrency(1).prefetch(10).build();
            AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(ConnectionSettings.builder(broker.host(), broker.port()).build())
                    .store(InMemoryIdempotencyStore.ofDefaults()).ticker(() -> 0L).observer(metrics)
                    .subscribe(subscription).start();
            try {
                metrics.bindTo(consumer);
                client.sendBatch(queue, 20, i -> "w-" + i);
                await().until(() -> count("accepted", "processed") == 20);
                client.send(queue, message("gate", "gate"));
                await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 1);
                client.send(queue, message("m-1", "m-1"), message("m-2", "m-2"), message("m-3", "m-3"),
                        message("m-4", "m-4"), message("m-5", "m-5"), message("m-6", "m-6"));
                await().until(() -> consumer.health().subscriptions().get(0).inFlight() == 7);
                gate.countDown();
                await().until(() -> slowStarted.get() == 1);
                CompletableFuture<Boolean> closing = CompletableFuture.supplyAsync(
                        () -> consumer.close(Duration.ofSeconds(20)));
                await().until(() -> count("released", "shutdown") >= 1);
                slow.countDown();
                closing.get(30, TimeUnit.SECONDS);
            } finally {
                gate.countDown();
                slow.countDown();
                consumer.close();
            }
        }
        return count("released", "shutdown");
    }

    private double count(String outcome, String reason) {
        Counter c = registry.find("acemq.consumer.deliveries").tags("subscription", SUBSCRIPTION, "outcome", outcome,
                "reason", reason).counter();
        return c == null ? 0 : c.count();
    }

    @Override
    public void close() {
        server.stop(0);
        registry.close();
    }
}

package org.acemq.amqp.samples.boot;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqListener;
import org.springframework.stereotype.Component;

/**
 * The application's only AceMQ code: one annotated method. "Applying" an order counts its effect; a real listener
 * would write to a database (see {@code databaseTransaction = "true"} in docs/spring-boot.md) or call a service. The
 * faults are carried by the orders themselves: {@code transient} fails the first attempt, {@code poison} every one.
 */
@Component
public class OrderListener {

    /** An order as published, in JSON. */
    public record Order(String id, String sku, int quantity, String fault) {
    }

    private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

    @AcemqListener(address = "${demo.queue}", concurrency = "8", maxAttempts = "5")
    void onOrder(Order order, Envelope envelope) {
        if ("poison".equals(order.fault())) {
            throw new IllegalStateException("order " + order.id() + " cannot be applied (poison)");
        }
        if ("transient".equals(order.fault()) && envelope.attempt() == 1) {
            throw new IllegalStateException("stock service briefly unavailable (simulated, attempt 1)");
        }
        effects.computeIfAbsent(order.id(), id -> new AtomicInteger()).incrementAndGet();
    }

    /** @return how often each order was applied */
    Map<String, AtomicInteger> effects() {
        return effects;
    }
}

package org.acemq.amqp.spring.internal;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * The {@code acemq} health contributor: {@code consumer.health()} as Actuator health. No I/O: it reads the
 * consumer's snapshot.
 *
 * <table>
 *   <caption>Status</caption>
 *   <tr><td>UP</td><td>running, connected, store reachable, every link attached</td></tr>
 *   <tr><td>DOWN</td><td>starting, broker or store unreachable, a link detached, or failed for good</td></tr>
 *   <tr><td>OUT_OF_SERVICE</td><td>stopping or stopped</td></tr>
 *   <tr><td>UNKNOWN</td><td>not started ({@code acemq.consumer.auto-startup=false} and not started yet)</td></tr>
 * </table>
 *
 * Details: the consumer's state, connection, store and pause flags, its last error (which the runtime keeps free of
 * credentials), and per subscription its address, link, in-flight, credit and oldest ages. Never the user name,
 * password or key material.
 */
final class AcemqHealthIndicator implements HealthIndicator {

    private final AcemqListenerContainer container;

    AcemqHealthIndicator(AcemqListenerContainer container) {
        this.container = container;
    }

    @Override
    public Health health() {
        Optional<AmqpConsumer> consumer = container.consumer();
        if (consumer.isEmpty()) {
            return Health.unknown().withDetail("state", "NOT_STARTED").build();
        }
        ConsumerHealth h = consumer.get().health();
        Health.Builder b = Health.status(status(h))
                .withDetail("state", h.state().name())
                .withDetail("connected", h.connected())
                .withDetail("storeReachable", h.storeReachable())
                .withDetail("paused", h.paused());
        if (h.lastError() != null) {
            b.withDetail("lastError", h.lastError());
        }
        Map<String, Object> subscriptions = new LinkedHashMap<>();
        for (ConsumerHealth.SubscriptionHealth s : h.subscriptions()) {
            Map<String, Object> link = new LinkedHashMap<>();
            link.put("address", s.address());
            link.put("attached", s.attached());
            if (s.stopped()) {
                link.put("stopped", true);
            }
            link.put("inFlight", s.inFlight());
            link.put("credit", s.credit());
            link.put("oldestInFlight", s.oldestInFlight().toString());
            link.put("oldestClaim", s.oldestClaim().toString());
            subscriptions.put(s.name(), link);
        }
        return b.withDetail("subscriptions", subscriptions).build();
    }

    static Status status(ConsumerHealth h) {
        if (h.healthy()) {
            return Status.UP;
        }
        return switch (h.state()) {
            case STOPPING, STOPPED -> Status.OUT_OF_SERVICE;
            default -> Status.DOWN;
        };
    }
}

package org.acemq.amqp.spring.internal;

import org.acemq.amqp.spring.AcemqListenerContainer;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * The {@code acemq} health contributor on Spring Boot 4 ({@code org.springframework.boot.health.contributor}): the
 * consumers' {@code health()} as Actuator health, computed by {@link ConsumersHealth} (which has no Actuator type in
 * it, so Boot 3's twin, {@code Boot3AcemqHealthIndicator}, shares it). No I/O: it reads the consumers' snapshots.
 *
 * <table>
 *   <caption>Status (of each connection's consumer; with several, the overall status is the worst)</caption>
 *   <tr><td>UP</td><td>running, connected, store reachable, every link attached</td></tr>
 *   <tr><td>DOWN</td><td>starting, broker or store unreachable, a link detached, or failed for good</td></tr>
 *   <tr><td>OUT_OF_SERVICE</td><td>stopping or stopped</td></tr>
 *   <tr><td>UNKNOWN</td><td>not started ({@code acemq.consumer.auto-startup=false} and not started yet)</td></tr>
 * </table>
 *
 * Details: the consumer's connection name, state, connection, store and pause flags, its last error (which the
 * runtime keeps free of credentials), and per subscription its address, link, in-flight, credit and oldest ages; with
 * several connections in use, these per connection under {@code connections.<name>}, each with its status. Never the
 * user name, password or key material.
 */
final class AcemqHealthIndicator implements HealthIndicator {

    private final AcemqListenerContainer container;

    AcemqHealthIndicator(AcemqListenerContainer container) {
        this.container = container;
    }

    @Override
    public Health health() {
        ConsumersHealth h = ConsumersHealth.of(container);
        return Health.status(new Status(h.status())).withDetails(h.details()).build();
    }
}

package org.acemq.amqp.spring.internal;

import org.acemq.amqp.spring.AcemqListenerContainer;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;

/**
 * The {@code acemq} health contributor on Spring Boot 3 ({@code org.springframework.boot.actuate.health}, module
 * {@code spring-boot-actuator}): the {@link ConsumersHealth} (status and details, computed without any Actuator
 * type) as Boot 3's {@link Health}. Boot 4's twin is {@link AcemqHealthIndicator}, which says what the status and
 * details mean.
 *
 * <p>Compiled from {@code src/boot3/java} against Spring Boot 3.5's actuator API (the module's pom, execution
 * {@code boot3-health}) and packaged in the same jar.
 */
final class Boot3AcemqHealthIndicator implements HealthIndicator {

    private final AcemqListenerContainer container;

    Boot3AcemqHealthIndicator(AcemqListenerContainer container) {
        this.container = container;
    }

    @Override
    public Health health() {
        ConsumersHealth h = ConsumersHealth.of(container);
        return Health.status(new Status(h.status())).withDetails(h.details()).build();
    }
}

package org.acemq.amqp.spring.internal;

import org.acemq.amqp.spring.AcemqListenerContainer;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code acemq} health contributor on Spring Boot 3.5, whose health types are
 * {@code org.springframework.boot.actuate.health.*} (Boot 4 moved them to {@code org.springframework.boot.health.*},
 * where {@link AcemqAutoConfiguration} registers {@link AcemqHealthIndicator}). Active only when Boot 3's actuator
 * health classes are on the class path, so on Boot 4 it is skipped without loading any of them.
 */
@AutoConfiguration(after = AcemqAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.boot.actuate.health.HealthIndicator",
        "org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator"})
public final class AcemqBoot3HealthAutoConfiguration {

    /** Nested: its condition's class exists only when the outer condition holds. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnEnabledHealthIndicator("acemq")
    static class EnabledHealthConfiguration {

        @Bean(name = AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN)
        @ConditionalOnBean(AcemqListenerContainer.class)
        @ConditionalOnMissingBean(name = AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN)
        HealthIndicator acemqHealthIndicator(AcemqListenerContainer container) {
            return new Boot3AcemqHealthIndicator(container);
        }
    }
}

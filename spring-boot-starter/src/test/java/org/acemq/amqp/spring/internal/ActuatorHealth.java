package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Map;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;

/**
 * The {@code acemq} health contributor as the application's Actuator sees it, on whichever Spring Boot line the test
 * runs: Boot 4's {@code org.springframework.boot.health.contributor.HealthIndicator} or Boot 3's
 * {@code org.springframework.boot.actuate.health.HealthIndicator}. The tests that check health share their sources
 * between the lines (tooling/spring-boot-lines), so they read the contributor through the methods both lines' types
 * have ({@code health()}, {@code getStatus().getCode()}, {@code getDetails()}) instead of importing one line's types.
 */
final class ActuatorHealth {

    private static final String[] INDICATOR_TYPES = {
        "org.springframework.boot.health.contributor.HealthIndicator",
        "org.springframework.boot.actuate.health.HealthIndicator"};

    private final Object indicator;

    private ActuatorHealth(Object indicator) {
        this.indicator = indicator;
    }

    /**
     * @param app a running application
     * @return its {@code acemq} contributor, checked to be the health indicator type of the Boot line on the class path
     */
    static ActuatorHealth of(ApplicationContext app) {
        Object bean = app.getBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN);
        Class<?> type = lineIndicatorType();
        assertThat(bean).as("the acemq contributor is a %s", type.getName()).isInstanceOf(type);
        return new ActuatorHealth(bean);
    }

    /** @return the health indicator type of the Boot line on the test's class path */
    static Class<?> lineIndicatorType() {
        ClassLoader loader = ActuatorHealth.class.getClassLoader();
        for (String name : INDICATOR_TYPES) {
            if (ClassUtils.isPresent(name, loader)) {
                return ClassUtils.resolveClassName(name, loader);
            }
        }
        throw new IllegalStateException("no Spring Boot health support on the class path (spring-boot-health on "
                + "Boot 4, spring-boot-actuator on Boot 3)");
    }

    /** @return the contributor's health now */
    Snapshot health() {
        Object health = call(indicator, "health");
        Object status = call(health, "getStatus");
        @SuppressWarnings("unchecked")
        Map<String, Object> details = (Map<String, Object>) call(health, "getDetails");
        return new Snapshot((String) call(status, "getCode"), details, health.toString());
    }

    /** @return the status code now: UP, DOWN, OUT_OF_SERVICE or UNKNOWN */
    String status() {
        return health().status();
    }

    /**
     * One reading of the contributor.
     *
     * @param status  Boot's status code
     * @param details the details
     * @param text    the Health's own {@code toString()}
     */
    record Snapshot(String status, Map<String, Object> details, String text) {
    }

    private static Object call(Object target, String method) {
        try {
            Method m = target.getClass().getMethod(method);
            m.setAccessible(true);
            return m.invoke(target);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(method + "() failed", e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("the health type " + target.getClass().getName() + " has no " + method
                    + "()", e);
        }
    }
}

package org.acemq.amqp.spring.internal;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;

/**
 * One {@code @AcemqListener} method as found on a bean, with its attributes already resolved (placeholders and
 * expressions evaluated; empty attributes left out).
 *
 * @param beanName the bean's name
 * @param bean the bean (possibly a proxy)
 * @param method the method to invoke on {@code bean}
 * @param attributes resolved string attributes by attribute name; absent when the attribute was empty
 * @param permanentFailures the annotation's permanent failure types
 * @param sendTo the resolved values of Spring Messaging's {@code @SendTo} on the method, or else on its class (empty
 *     values dropped; an empty list for an empty {@code @SendTo}); null without one
 */
record ListenerEndpoint(String beanName, Object bean, Method method, Map<String, String> attributes,
                        List<Class<? extends Throwable>> permanentFailures, List<String> sendTo) {

    ListenerEndpoint {
        attributes = Map.copyOf(attributes);
        permanentFailures = List.copyOf(permanentFailures);
        sendTo = sendTo == null ? null : List.copyOf(sendTo);
    }

    ListenerEndpoint(String beanName, Object bean, Method method, Map<String, String> attributes,
            List<Class<? extends Throwable>> permanentFailures) {
        this(beanName, bean, method, attributes, permanentFailures, null);
    }

    /** @return "Bean.method" for messages */
    String describe() {
        return method.getDeclaringClass().getSimpleName() + "." + method.getName();
    }
}

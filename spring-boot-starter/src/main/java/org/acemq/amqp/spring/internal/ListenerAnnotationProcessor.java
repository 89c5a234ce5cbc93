package org.acemq.amqp.spring.internal;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.acemq.amqp.spring.AcemqListener;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.config.BeanExpressionContext;
import org.springframework.beans.factory.config.BeanExpressionResolver;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationAttributes;
import org.springframework.messaging.handler.annotation.SendTo;

/**
 * Finds {@link AcemqListener} methods on every bean and records them, with their attributes resolved, for the
 * listener container. Registered by the auto-configuration as a static bean.
 */
final class ListenerAnnotationProcessor implements BeanPostProcessor, BeanFactoryAware {

    /** The string attributes of {@link AcemqListener}, resolved as placeholders / expressions. */
    static final List<String> STRING_ATTRIBUTES = stringAttributes();

    private final List<ListenerEndpoint> endpoints = new CopyOnWriteArrayList<>();
    private ConfigurableBeanFactory beanFactory;
    private BeanExpressionContext expressionContext;

    @Override
    public void setBeanFactory(BeanFactory beanFactory) throws BeansException {
        if (beanFactory instanceof ConfigurableBeanFactory configurable) {
            this.beanFactory = configurable;
            this.expressionContext = new BeanExpressionContext(configurable, null);
        }
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
        Class<?> targetClass = AopUtils.getTargetClass(bean);
        if (!AnnotatedElementUtils.hasAnnotation(targetClass, AcemqListener.class)
                && !hasAnnotatedMethod(targetClass)) {
            return bean;
        }
        Map<Method, AcemqListener> methods = MethodIntrospector.selectMethods(targetClass,
                (MethodIntrospector.MetadataLookup<AcemqListener>) m ->
                        AnnotatedElementUtils.findMergedAnnotation(m, AcemqListener.class));
        for (Map.Entry<Method, AcemqListener> e : methods.entrySet()) {
            Method invocable = AopUtils.selectInvocableMethod(e.getKey(), bean.getClass());
            endpoints.add(endpoint(beanName, bean, invocable, e.getKey(), targetClass));
        }
        return bean;
    }

    /** @return every listener found so far, in the order the beans were initialised */
    List<ListenerEndpoint> endpoints() {
        return List.copyOf(endpoints);
    }

    private static boolean hasAnnotatedMethod(Class<?> type) {
        return !MethodIntrospector.selectMethods(type,
                (MethodIntrospector.MetadataLookup<Boolean>) m ->
                        AnnotatedElementUtils.hasAnnotation(m, AcemqListener.class) ? Boolean.TRUE : null).isEmpty();
    }

    private ListenerEndpoint endpoint(String beanName, Object bean, Method invocable, Method annotated,
            Class<?> targetClass) {
        AnnotationAttributes attrs = AnnotatedElementUtils.getMergedAnnotationAttributes(annotated,
                AcemqListener.class);
        Map<String, String> resolved = new LinkedHashMap<>();
        for (String attribute : STRING_ATTRIBUTES) {
            String value = resolve(attrs.getString(attribute));
            if (value != null && !value.isBlank()) {
                resolved.put(attribute, value.trim());
            }
        }
        List<Class<? extends Throwable>> permanent = new ArrayList<>();
        for (Class<?> type : attrs.getClassArray("permanentFailure")) {
            permanent.add(type.asSubclass(Throwable.class));
        }
        return new ListenerEndpoint(beanName, bean, invocable, resolved, permanent, sendTo(annotated, targetClass));
    }

    /** The resolved addresses of {@code @SendTo} on the method, else on its class; null without one. */
    private List<String> sendTo(Method annotated, Class<?> targetClass) {
        SendTo sendTo = AnnotatedElementUtils.findMergedAnnotation(annotated, SendTo.class);
        if (sendTo == null) {
            sendTo = AnnotatedElementUtils.findMergedAnnotation(targetClass, SendTo.class);
        }
        if (sendTo == null) {
            return null;
        }
        List<String> addresses = new ArrayList<>();
        for (String value : sendTo.value()) {
            String address = resolve(value);
            if (address != null && !address.isBlank()) {
                addresses.add(address.trim());
            }
        }
        return addresses;
    }

    /** Resolves {@code ${...}} placeholders, then evaluates a {@code #{...}} expression, as Spring's @Value does. */
    private String resolve(String value) {
        if (beanFactory == null || value == null || value.isEmpty()) {
            return value;
        }
        String resolved = beanFactory.resolveEmbeddedValue(value);
        BeanExpressionResolver resolver = beanFactory.getBeanExpressionResolver();
        if (resolver == null || resolved == null) {
            return resolved;
        }
        Object evaluated = resolver.evaluate(resolved, expressionContext);
        return evaluated == null ? null : evaluated.toString();
    }

    private static List<String> stringAttributes() {
        List<String> names = new ArrayList<>();
        for (Method m : AcemqListener.class.getDeclaredMethods()) {
            if (m.getReturnType() == String.class) {
                names.add(m.getName());
            }
        }
        names.sort(null);
        return List.copyOf(names);
    }
}

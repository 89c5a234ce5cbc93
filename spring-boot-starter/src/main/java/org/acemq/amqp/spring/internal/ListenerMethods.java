package org.acemq.amqp.spring.internal;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqMessageConverterCustomizer;
import org.acemq.amqp.spring.AcemqSender;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.MethodParameter;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.format.support.DefaultFormattingConversionService;
import org.springframework.messaging.Message;
import org.springframework.messaging.converter.MessageConversionException;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.messaging.converter.SmartMessageConverter;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.messaging.handler.annotation.support.HeaderMethodArgumentResolver;
import org.springframework.messaging.handler.annotation.support.HeadersMethodArgumentResolver;
import org.springframework.messaging.handler.annotation.support.MessageMethodArgumentResolver;
import org.springframework.messaging.handler.annotation.support.PayloadMethodArgumentResolver;
import org.springframework.messaging.handler.invocation.HandlerMethodArgumentResolver;
import org.springframework.messaging.handler.invocation.HandlerMethodArgumentResolverComposite;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringUtils;
import org.springframework.validation.Validator;
import org.springframework.validation.annotation.Validated;

/**
 * Makes the {@link ListenerMethod}s and {@link BatchListenerMethod}s: Spring Messaging's argument resolvers
 * ({@code @Header}, {@code @Headers}, {@code Message<?>}, ours for {@code Envelope} and {@code AcemqSender}, and the
 * payload last, as Spring's own handler-method factories order them), the message converters
 * ({@link MessageConverters}, which also write what listeners send: {@link OutgoingMessages}) and the application's
 * {@code Validator}, set up once, when the first listener is made (every bean exists then), and shared by every
 * listener.
 */
final class ListenerMethods {

    private static final boolean JAKARTA_VALIDATION = ClassUtils.isPresent("jakarta.validation.Validator",
            ListenerMethods.class.getClassLoader());

    private final BeanFactory beans;
    private final Supplier<List<AcemqMessageConverterCustomizer>> customizers;
    private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();
    private Resolvers resolvers;

    /**
     * @param beans the application's beans: its Jackson mapper, its Validator
     * @param customizers the application's converter customizers, in order
     */
    ListenerMethods(BeanFactory beans, Supplier<List<AcemqMessageConverterCustomizer>> customizers) {
        this.beans = beans;
        this.customizers = customizers;
    }

    /** What every listener shares. */
    record Resolvers(HandlerMethodArgumentResolverComposite composite, PayloadResolver payload,
                     PayloadResolver keyPayload, Validator validator, OutgoingMessages outgoing) {
    }

    private synchronized Resolvers resolvers() {
        if (resolvers == null) {
            DefaultFormattingConversionService conversion = new DefaultFormattingConversionService();
            MessageConverter converter = MessageConverters.create(beans, conversion, customizers.get());
            Validator validator = validator(beans);
            PayloadResolver payload = new PayloadResolver(converter, validator);
            OutgoingMessages outgoing = new OutgoingMessages(converter);
            HandlerMethodArgumentResolverComposite composite = new HandlerMethodArgumentResolverComposite();
            composite.addResolvers(
                    new HeaderMethodArgumentResolver(conversion,
                            beans instanceof ConfigurableBeanFactory configurable ? configurable : null),
                    new HeadersMethodArgumentResolver(),
                    new MessageMethodArgumentResolver(converter),
                    new EnvelopeArgumentResolver(),
                    new ListenerSender.Resolver(outgoing),
                    payload);
            // the key expression reads the payload as the method does, but does not validate it: an invalid payload
            // is rejected as such when the method's arguments are resolved, not as a message without a key
            resolvers = new Resolvers(composite, payload, new PayloadResolver(converter, null), validator, outgoing);
        }
        return resolvers;
    }

    /**
     * @param endpoint a listener method
     * @return its handler
     * @throws IllegalStateException if a parameter cannot be resolved: two body parameters, {@code @Payload} with an
     *     expression, {@code @Header} without a name the method's class file does not record, {@code @Valid}
     *     without a Validator
     */
    ListenerMethod create(ListenerEndpoint endpoint) {
        Resolvers r = resolvers();
        Method method = endpoint.method();
        ListenerMethod.Invocable invocable = new ListenerMethod.Invocable(endpoint.bean(), method);
        invocable.setMessageMethodArgumentResolvers(r.composite());
        MethodParameter[] parameters = invocable.getMethodParameters();
        String where = "@AcemqListener method " + endpoint.describe();
        List<String> bodies = new ArrayList<>();
        int payloadIndex = -1;
        for (MethodParameter p : parameters) {
            p.initParameterNameDiscovery(parameterNames);
            HandlerMethodArgumentResolver resolver = resolverFor(r.composite(), p);
            if (resolver == null) {
                throw new IllegalStateException(where + ": no resolver for " + describe(p));
            }
            Header header = p.getParameterAnnotation(Header.class);
            if (header != null && !StringUtils.hasText(header.value()) && !StringUtils.hasText(header.name())
                    && p.getParameterName() == null) {
                throw new IllegalStateException(where + ": " + describe(p) + " is annotated @Header without a "
                        + "name, and the parameter's name is not in the class file (compiled without -parameters); "
                        + "name the header: @Header(\"orderId\")");
            }
            if (resolver != r.payload()) {
                continue;
            }
            Class<?> element = p.getParameterType() == List.class ? ResolvableType.forMethodParameter(p)
                    .getGeneric(0).resolve(Object.class) : null;
            if (element == Envelope.class || element == AcemqSender.class || element == Message.class) {
                throw new IllegalStateException(where + ": " + describe(p) + " is a batch listener's parameter; "
                        + "set batch = \"true\" (and batchSize) to receive messages a batch at a time");
            }
            bodies.add(describe(p));
            payloadIndex = p.getParameterIndex();
            Payload payload = p.getParameterAnnotation(Payload.class);
            if (payload != null && StringUtils.hasText(payload.expression())) {
                throw new IllegalStateException(where + ": " + describe(p) + " has @Payload(expression = \""
                        + payload.expression() + "\"), which is not supported; the payload is the whole body");
            }
            if (validates(p) && r.validator() == null) {
                throw new IllegalStateException(where + ": " + describe(p) + " is to be validated (@Valid or "
                        + "@Validated), but the application has no Validator: add spring-boot-starter-validation "
                        + "(or declare a jakarta.validation.Validator or Spring Validator bean)");
            }
        }
        if (bodies.size() > 1) {
            throw new IllegalStateException(where + " takes " + bodies.size() + " body parameters (" + String.join(
                    ", ", bodies) + "), but a message has one body: annotate the others with @Header(\"name\") or "
                    + "@Headers, or declare them as Envelope or Message<?>");
        }
        return new ListenerMethod(invocable, parameters, r.composite(), payloadIndex, r.keyPayload(),
                returnValues(endpoint, invocable, r.outgoing()), endpoint.describe());
    }

    /**
     * @return what sends the method's return value: to its {@code @SendTo} address, or as a reply; null for a
     *     {@code void} method
     * @throws IllegalStateException if {@code @SendTo} names more than one address, or is on a {@code void} method
     */
    private static ReturnValues returnValues(ListenerEndpoint endpoint, ListenerMethod.Invocable invocable,
            OutgoingMessages outgoing) {
        Method method = endpoint.method();
        String where = "@AcemqListener method " + endpoint.describe();
        List<String> sendTo = endpoint.sendTo();
        if (sendTo != null && sendTo.size() > 1) {
            throw new IllegalStateException(where + " has @SendTo with " + sendTo.size() + " addresses " + sendTo
                    + "; a return value goes to one address (send to others with an AcemqSender parameter)");
        }
        boolean returnsNothing = method.getReturnType() == void.class || method.getReturnType() == Void.class;
        if (returnsNothing) {
            if (AnnotatedElementUtils.hasAnnotation(method, SendTo.class)) {
                throw new IllegalStateException(where + " has @SendTo but returns void, so it sends nothing; return "
                        + "the message to send, or remove @SendTo");
            }
            return null;
        }
        String address = sendTo == null || sendTo.isEmpty() ? null : sendTo.get(0);
        return new ReturnValues(outgoing, address, invocable.getReturnType(), endpoint.describe());
    }

    /**
     * @param endpoint a batch listener method: {@code void}, every parameter a {@code List}
     * @return its handler
     * @throws IllegalStateException if the method returns a value, a parameter is not a {@code List} or its element
     *     cannot be resolved, or two lists take the body
     */
    BatchListenerMethod createBatch(ListenerEndpoint endpoint) {
        Resolvers r = resolvers();
        Method method = endpoint.method();
        ListenerMethod.Invocable invocable = new ListenerMethod.Invocable(endpoint.bean(), method);
        String where = "@AcemqListener batch method " + endpoint.describe();
        if (method.getReturnType() != void.class) {
            throw new IllegalStateException(where + " returns " + method.getGenericReturnType().getTypeName()
                    + ", but a batch listener returns void; send through a List<AcemqSender> or List<Envelope> "
                    + "parameter (one per message)");
        }
        List<BatchListenerMethod.Element> elements = new ArrayList<>();
        List<String> bodies = new ArrayList<>();
        int payloadIndex = -1;
        for (MethodParameter p : invocable.getMethodParameters()) {
            p.initParameterNameDiscovery(parameterNames);
            if (p.getParameterType() != List.class) {
                throw new IllegalStateException(where + ": " + describe(p) + " is not a List; every parameter of a "
                        + "batch listener is a list with one element per message: List<Order> (the payloads), "
                        + "List<Message<Order>>, List<Envelope>, List<AcemqSender>, @Header(\"name\") List<String>");
            }
            BatchListenerMethod.ElementParameter element = new BatchListenerMethod.ElementParameter(p,
                    parameterNames);
            HandlerMethodArgumentResolver resolver = resolverFor(r.composite(), element);
            if (resolver == null) {
                throw new IllegalStateException(where + ": no resolver for the elements of " + describe(p));
            }
            Header header = p.getParameterAnnotation(Header.class);
            if (header != null && !StringUtils.hasText(header.value()) && !StringUtils.hasText(header.name())
                    && p.getParameterName() == null) {
                throw new IllegalStateException(where + ": " + describe(p) + " is annotated @Header without a name, "
                        + "and the parameter's name is not in the class file (compiled without -parameters); name the "
                        + "header: @Header(\"orderId\")");
            }
            boolean payload = resolver == r.payload();
            if (payload) {
                bodies.add(describe(p));
                payloadIndex = elements.size();
                Payload annotation = p.getParameterAnnotation(Payload.class);
                if (annotation != null && StringUtils.hasText(annotation.expression())) {
                    throw new IllegalStateException(where + ": " + describe(p) + " has @Payload(expression = \""
                            + annotation.expression() + "\"), which is not supported; the payload is the whole body");
                }
                if (validates(p) && r.validator() == null) {
                    throw new IllegalStateException(where + ": " + describe(p) + " is to be validated (@Valid or "
                            + "@Validated), but the application has no Validator: add spring-boot-starter-validation "
                            + "(or declare a jakarta.validation.Validator or Spring Validator bean)");
                }
            }
            elements.add(new BatchListenerMethod.Element(element, resolver, payload));
        }
        if (bodies.size() > 1) {
            throw new IllegalStateException(where + " takes " + bodies.size() + " lists of bodies (" + String.join(
                    ", ", bodies) + "), but a message has one body: declare the others as List<Envelope>, "
                    + "List<Message<?>> or List<AcemqSender>, or annotate them @Header(\"name\")");
        }
        if (elements.isEmpty()) {
            throw new IllegalStateException(where + " takes no parameter; a batch listener takes at least one list");
        }
        return new BatchListenerMethod(invocable, elements, payloadIndex, r.keyPayload(), endpoint.describe());
    }

    /** The resolver the composite picks for a parameter: the first that supports it. */
    private static HandlerMethodArgumentResolver resolverFor(HandlerMethodArgumentResolverComposite composite,
            MethodParameter p) {
        for (HandlerMethodArgumentResolver resolver : composite.getResolvers()) {
            if (resolver.supportsParameter(p)) {
                return resolver;
            }
        }
        return null;
    }

    private static String describe(MethodParameter p) {
        String name = p.getParameterName();
        return "parameter " + p.getParameterIndex() + " (" + p.getGenericParameterType().getTypeName()
                + (name == null ? "" : " " + name) + ")";
    }

    /** The annotations PayloadMethodArgumentResolver validates on (its rule: Validated, or a name "Valid..."). */
    private static boolean validates(MethodParameter p) {
        for (Annotation a : p.getParameterAnnotations()) {
            if (AnnotationUtils.getAnnotation(a, Validated.class) != null
                    || a.annotationType().getSimpleName().startsWith("Valid")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The application's validator: its only {@code jakarta.validation.Validator} bean (Boot's {@code defaultValidator}
     * with spring-boot-starter-validation), else its only Spring {@code Validator} bean, else none.
     */
    static Validator validator(BeanFactory beans) {
        if (JAKARTA_VALIDATION) {
            Validator jakarta = JakartaValidation.fromBean(beans);
            if (jakarta != null) {
                return jakarta;
            }
        }
        return beans.getBeanProvider(Validator.class).getIfUnique();
    }

    /** Separate so that a class path without jakarta.validation never loads its types. */
    private static final class JakartaValidation {
        static Validator fromBean(BeanFactory beans) {
            jakarta.validation.Validator validator = beans.getBeanProvider(jakarta.validation.Validator.class)
                    .getIfUnique();
            if (validator instanceof Validator spring) {
                return spring;
            }
            return validator == null ? null
                    : new org.springframework.validation.beanvalidation.SpringValidatorAdapter(validator);
        }
    }

    /** Resolves {@link Envelope} parameters: the message itself. */
    static final class EnvelopeArgumentResolver implements HandlerMethodArgumentResolver {
        @Override
        public boolean supportsParameter(MethodParameter parameter) {
            return parameter.getParameterType() == Envelope.class;
        }

        @Override
        public Object resolveArgument(MethodParameter parameter, Message<?> message) {
            if (message instanceof EnvelopeMessage envelope) {
                return envelope.envelope();
            }
            throw new IllegalStateException("not a message the AceMQ consumer received: " + message);
        }
    }

    /**
     * Spring's payload resolver, with what an AMQP body needs besides: a message without a body (an empty
     * {@code Optional} payload) fails a required payload parameter as a conversion does, while an empty string or
     * empty bytes are a body like any other (Spring counts them as missing); and a map or list body given to a
     * parameterized {@code Map} or {@code Collection} parameter ({@code List<Order>}) is converted element by element
     * instead of being passed as it is because its raw type matches.
     */
    static final class PayloadResolver extends PayloadMethodArgumentResolver {
        private final MessageConverter converter;

        PayloadResolver(MessageConverter converter, Validator validator) {
            super(converter, validator, true);
            this.converter = converter;
        }

        @Override
        protected boolean isEmptyPayload(Object payload) {
            return payload == null || EnvelopeMessage.isNoBody(payload);
        }

        @Override
        public Object resolveArgument(MethodParameter parameter, Message<?> message) throws Exception {
            Object payload = message.getPayload();
            if (EnvelopeMessage.isNoBody(payload)) {
                Payload annotation = parameter.getParameterAnnotation(Payload.class);
                if ((annotation == null || annotation.required()) && parameter.getParameterType() != Optional.class) {
                    throw new MessageConversionException(message, "the message has no body (@Payload(required = "
                            + "false) receives null then)");
                }
                return super.resolveArgument(parameter, message);
            }
            if (convertsElements(parameter, payload)) {
                Class<?> target = parameter.getParameterType();
                Object converted = converter instanceof SmartMessageConverter smart
                        ? smart.fromMessage(message, target, parameter) : converter.fromMessage(message, target);
                if (converted == null) {
                    throw new MessageConversionException(message, "no converter reads a "
                            + payload.getClass().getName() + " body as " + parameter.getGenericParameterType());
                }
                validate(message, parameter, converted);
                return converted;
            }
            return super.resolveArgument(parameter, message);
        }

        /** True if the body's raw type fits but an element does not fit the parameter's element type. */
        private static boolean convertsElements(MethodParameter parameter, Object payload) {
            if (!parameter.getParameterType().isInstance(payload)) {
                return false;
            }
            ResolvableType type = ResolvableType.forMethodParameter(parameter);
            if (payload instanceof java.util.Map<?, ?> map) {
                ResolvableType asMap = type.asMap();
                Class<?> key = asMap.getGeneric(0).resolve(Object.class);
                Class<?> value = asMap.getGeneric(1).resolve(Object.class);
                return map.entrySet().stream().anyMatch(e -> !fits(key, e.getKey()) || !fits(value, e.getValue()));
            }
            if (payload instanceof java.util.Collection<?> collection) {
                Class<?> element = type.asCollection().getGeneric(0).resolve(Object.class);
                return collection.stream().anyMatch(e -> !fits(element, e));
            }
            return false;
        }

        private static boolean fits(Class<?> type, Object value) {
            return value == null || ClassUtils.isAssignableValue(type, value);
        }
    }
}

package org.acemq.amqp.spring.internal;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.RejectionConditions;
import org.springframework.core.MethodParameter;
import org.springframework.messaging.handler.annotation.support.MethodArgumentNotValidException;
import org.springframework.messaging.handler.invocation.HandlerMethodArgumentResolver;
import org.springframework.messaging.handler.invocation.HandlerMethodArgumentResolverComposite;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;
import org.springframework.validation.BindingResult;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

/**
 * Calls one listener method for a message, through Spring Messaging: the {@link Envelope} becomes a Spring
 * {@link org.springframework.messaging.Message} ({@link EnvelopeMessage}), each parameter is resolved by the
 * argument resolvers ({@link ListenerMethods}), and the method is invoked by Spring's
 * {@link InvocableHandlerMethod}.
 *
 * <p>A message whose arguments cannot be resolved can never succeed, so it is a permanent failure: a payload that
 * fails validation is rejected with {@link RejectionConditions#VALIDATION_FAILED}, anything else (a body or header
 * that cannot be converted, a required header that is missing, no body) with {@link RejectionConditions#DECODE_ERROR}.
 * What the method itself throws reaches the runtime unchanged, so the runtime alone decides the outcome. What it
 * returns is sent ({@link ReturnValues}).
 */
final class ListenerMethod implements MessageHandler {

    private final Invocable method;
    private final MethodParameter[] parameters;
    private final HandlerMethodArgumentResolverComposite resolvers;
    private final int payloadIndex;
    private final ListenerMethods.PayloadResolver keyPayload;
    private final ReturnValues returnValues;
    private final String description;

    /**
     * @param returnValues sends what the method returns; null for a {@code void} method
     */
    ListenerMethod(Invocable method, MethodParameter[] parameters, HandlerMethodArgumentResolverComposite resolvers,
            int payloadIndex, ListenerMethods.PayloadResolver keyPayload, ReturnValues returnValues,
            String description) {
        this.method = method;
        this.parameters = parameters;
        this.resolvers = resolvers;
        this.payloadIndex = payloadIndex;
        this.keyPayload = keyPayload;
        this.returnValues = returnValues;
        this.description = description;
    }

    @Override
    public void handle(Envelope envelope) throws Exception {
        EnvelopeMessage message = EnvelopeMessage.of(envelope);
        Object[] args = new Object[parameters.length];
        for (int i = 0; i < args.length; i++) {
            args[i] = resolve(parameters[i], message, envelope);
        }
        Object result = method.call(args);
        if (returnValues != null) {
            returnValues.send(result, envelope);
        }
    }

    /**
     * @param envelope a message
     * @return its body as the method's payload parameter receives it, not validated; the decoded body when the
     *     method has no payload parameter
     * @throws Exception if it cannot be converted
     */
    Object payload(Envelope envelope) throws Exception {
        if (payloadIndex < 0) {
            return envelope.body();
        }
        return keyPayload.resolveArgument(parameters[payloadIndex], EnvelopeMessage.of(envelope));
    }

    private Object resolve(MethodParameter parameter, EnvelopeMessage message, Envelope envelope)
            throws PermanentMessageException {
        return argument(resolvers, parameter, message, envelope, parameter.getParameterIndex() == payloadIndex,
                description);
    }

    /**
     * Resolves one argument; a message it cannot be resolved from fails permanently.
     *
     * @param resolver the resolver of the parameter
     * @param parameter the parameter
     * @param message the message as Spring sees it
     * @param envelope the message
     * @param payload whether the parameter is the payload (for the wording)
     * @param description the listener method, for messages
     * @return the argument
     * @throws PermanentMessageException with {@link RejectionConditions#VALIDATION_FAILED} for a payload that fails
     *     validation, {@link RejectionConditions#DECODE_ERROR} for anything else
     */
    static Object argument(HandlerMethodArgumentResolver resolver, MethodParameter parameter, EnvelopeMessage message,
            Envelope envelope, boolean payload, String description) throws PermanentMessageException {
        try {
            return resolver.resolveArgument(parameter, message);
        } catch (PermanentMessageException e) {
            throw e;
        } catch (MethodArgumentNotValidException e) {
            throw new PermanentMessageException(RejectionConditions.VALIDATION_FAILED,
                    violations(parameter, e, description), e);
        } catch (Exception | LinkageError e) {
            String what = payload
                    ? "the body of " + envelope.id() + " cannot be converted to "
                            + parameter.getGenericParameterType().getTypeName()
                    : "parameter " + parameter.getParameterIndex() + " ("
                            + parameter.getGenericParameterType().getTypeName() + ") cannot be resolved from "
                            + envelope.id();
            throw new PermanentMessageException(RejectionConditions.DECODE_ERROR, what + " for " + description + ": "
                    + e.getMessage(), e);
        }
    }

    /** "the Order payload of Orders.onOrder is not valid: quantity: must be greater than 0; ..." (no values). */
    private static String violations(MethodParameter parameter, MethodArgumentNotValidException e,
            String description) {
        BindingResult result = e.getBindingResult();
        List<String> errors = new ArrayList<>();
        if (result != null) {
            for (ObjectError error : result.getAllErrors()) {
                errors.add(error instanceof FieldError field ? field.getField() + ": " + field.getDefaultMessage()
                        : String.valueOf(error.getDefaultMessage()));
            }
        }
        errors.sort(null);
        return "the " + parameter.getParameterType().getSimpleName() + " payload of " + description
                + " is not valid: " + (errors.isEmpty() ? e.getMessage() : String.join("; ", errors));
    }

    @Override
    public String toString() {
        return "@AcemqListener " + description;
    }

    /** Spring's invocable handler method, with its invocation reachable once the arguments are resolved. */
    static final class Invocable extends InvocableHandlerMethod {
        Invocable(Object bean, Method method) {
            super(bean, method);
        }

        /** Invokes the method; what it throws is thrown as it is (checked exceptions included). */
        Object call(Object... args) throws Exception {
            return doInvoke(args);
        }
    }
}

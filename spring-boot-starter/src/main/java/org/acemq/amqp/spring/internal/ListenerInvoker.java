package org.acemq.amqp.spring.internal;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.spring.BodyConverter;
import org.springframework.util.ReflectionUtils;

/**
 * Calls one listener method for a message: the {@link Envelope} and/or the converted body as arguments. What the
 * method throws reaches the runtime unchanged, so the runtime alone decides the outcome.
 */
final class ListenerInvoker implements MessageHandler {

    /** The rejection condition for a body the converter cannot convert (as the runtime's own decode errors). */
    static final String DECODE_ERROR = "amqp:decode-error";

    private final Object bean;
    private final Method method;
    private final BodyConverter converter;
    private final int envelopeIndex;
    private final int bodyIndex;
    private final Type bodyType;
    private final String description;

    private ListenerInvoker(Object bean, Method method, BodyConverter converter, int envelopeIndex, int bodyIndex,
            String description) {
        this.bean = bean;
        this.method = method;
        this.converter = converter;
        this.envelopeIndex = envelopeIndex;
        this.bodyIndex = bodyIndex;
        this.bodyType = bodyIndex < 0 ? null : method.getGenericParameterTypes()[bodyIndex];
        this.description = description;
    }

    /**
     * @param endpoint the listener
     * @param converter the body converter
     * @return the handler
     * @throws IllegalStateException if the method's parameters are not (at most) an Envelope and one body
     */
    static ListenerInvoker of(ListenerEndpoint endpoint, BodyConverter converter) {
        Method method = endpoint.method();
        Class<?>[] types = method.getParameterTypes();
        int envelope = -1;
        int body = -1;
        for (int i = 0; i < types.length; i++) {
            if (types[i] == Envelope.class && envelope < 0) {
                envelope = i;
            } else if (body < 0) {
                body = i;
            } else {
                throw new IllegalStateException("@AcemqListener method " + endpoint.describe() + " must take at most "
                        + "an Envelope and one body parameter, but takes " + types.length + " parameters");
            }
        }
        ReflectionUtils.makeAccessible(method);
        return new ListenerInvoker(endpoint.bean(), method, converter, envelope, body, endpoint.describe());
    }

    @Override
    public void handle(Envelope envelope) throws Exception {
        Object[] args = new Object[method.getParameterCount()];
        if (envelopeIndex >= 0) {
            args[envelopeIndex] = envelope;
        }
        if (bodyIndex >= 0) {
            args[bodyIndex] = convert(envelope);
        }
        try {
            method.invoke(bean, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception exception) {
                throw exception;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }

    /**
     * @param envelope a message
     * @return its body as the method's body parameter receives it, or the decoded body when the method has none
     * @throws Exception if the converter cannot convert it
     */
    Object payload(Envelope envelope) throws Exception {
        return bodyIndex < 0 ? envelope.body() : converter.convert(envelope, bodyType);
    }

    private Object convert(Envelope envelope) throws Exception {
        try {
            return converter.convert(envelope, bodyType);
        } catch (PermanentMessageException e) {
            throw e;
        } catch (Exception | LinkageError e) {
            throw new PermanentMessageException(DECODE_ERROR, "the body of " + envelope.id() + " cannot be "
                    + "converted to " + bodyType.getTypeName() + " for " + description + ": " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "@AcemqListener " + description;
    }
}

package org.acemq.amqp.spring.internal;

import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.KeySource;
import org.springframework.expression.AccessException;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.PropertyAccessor;
import org.springframework.expression.TypedValue;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.DataBindingPropertyAccessor;
import org.springframework.expression.spel.support.SimpleEvaluationContext;

/**
 * A listener's {@code key} attribute or property: a SpEL expression, parsed once, that computes each message's
 * idempotency key over a {@link Root} ({@code headers}, {@code payload}, {@code messageId}, {@code envelope}).
 *
 * <p>The expression comes from the application's own code or configuration, but it is evaluated once per message on
 * values the publisher chose, so it runs in a {@link SimpleEvaluationContext} restricted to reading: properties
 * (getters, record components, public fields), map entries and indexes. No type references ({@code T(...)}), bean
 * references, constructors, method calls or assignments: a key needs none of them, and without them no message can
 * reach anything but its own data.
 */
final class KeyExpression {

    private static final SpelExpressionParser PARSER = new SpelExpressionParser();
    /** Immutable once built and holds no per-evaluation state, so one context serves every thread. */
    private static final EvaluationContext CONTEXT = SimpleEvaluationContext
            .forPropertyAccessors(new ReadOnlyMapAccessor(), DataBindingPropertyAccessor.forReadOnlyAccess())
            .build();

    /**
     * {@code headers.orderId}: a map's entry read as a property, never written. Spring Framework 7 has one
     * ({@code org.springframework.expression.spel.support.MapAccessor}), 6.2 (Boot 3.5) another, in
     * spring-context; this one works on both.
     */
    static final class ReadOnlyMapAccessor implements PropertyAccessor {

        @Override
        public Class<?>[] getSpecificTargetClasses() {
            return new Class<?>[] {Map.class};
        }

        @Override
        public boolean canRead(EvaluationContext context, Object target, String name) {
            return target instanceof Map<?, ?> map && map.containsKey(name);
        }

        @Override
        public TypedValue read(EvaluationContext context, Object target, String name) throws AccessException {
            if (!(target instanceof Map<?, ?> map) || !map.containsKey(name)) {
                throw new AccessException("no entry '" + name + "'");
            }
            return new TypedValue(map.get(name));
        }

        @Override
        public boolean canWrite(EvaluationContext context, Object target, String name) {
            return false;
        }

        @Override
        public void write(EvaluationContext context, Object target, String name, Object newValue)
                throws AccessException {
            throw new AccessException("key expressions only read: cannot write '" + name + "'");
        }
    }

    /** Reads a message's payload as the listener method would receive it. */
    @FunctionalInterface
    interface PayloadReader {
        Object read(Envelope envelope) throws Exception;
    }

    private KeyExpression() {
    }

    /**
     * @param text the SpEL expression
     * @param payload reads the payload (called only when the expression reads {@code payload})
     * @return the key source
     * @throws IllegalArgumentException if the expression does not parse
     */
    static KeySource parse(String text, PayloadReader payload) {
        return parse("key", text, payload);
    }

    /**
     * @param setting the setting that holds the expression ({@code key}, {@code orderBy}), for messages
     * @param text the SpEL expression
     * @param payload reads the payload (called only when the expression reads {@code payload})
     * @return the key source
     * @throws IllegalArgumentException if the expression does not parse
     */
    static KeySource parse(String setting, String text, PayloadReader payload) {
        Expression expression;
        try {
            expression = PARSER.parseExpression(text);
        } catch (ParseException e) {
            throw new IllegalArgumentException(setting + " must be a SpEL expression such as payload.orderId or "
                    + "headers['orderId'], but '" + text + "' is not: " + e.getMessage(), e);
        }
        // a null value, or an exception (which the runtime logs), means "no key": the message is rejected
        return KeySource.of(text, envelope -> evaluate(expression, new Root(envelope, payload)));
    }

    private static Object evaluate(Expression expression, Root root) {
        try {
            return expression.getValue(CONTEXT, root);
        } catch (EvaluationException e) {
            // SpEL wraps a failed getter twice; the runtime logs the outermost message only, so say what happened
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof UnreadablePayload unreadable) {
                    throw unreadable;
                }
            }
            throw e;
        }
    }

    /** The payload could not be converted for the key expression. */
    static final class UnreadablePayload extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UnreadablePayload(Exception cause) {
            super("the payload cannot be read for the key expression: " + cause.getClass().getSimpleName() + ": "
                    + cause.getMessage(), cause);
        }
    }

    /**
     * What a key expression reads. Public so that SpEL's reflective accessors can call its getters; it lives in the
     * starter's internal package and is not API.
     */
    public static final class Root {
        private final Envelope envelope;
        private final PayloadReader payload;

        Root(Envelope envelope, PayloadReader payload) {
            this.envelope = envelope;
            this.payload = payload;
        }

        /** @return the message's application properties */
        public Map<String, Object> getHeaders() {
            return envelope.applicationProperties();
        }

        /**
         * @return the body as the listener's payload parameter receives it (the decoded body if it has none)
         * @throws UnreadablePayload if the body cannot be converted
         */
        public Object getPayload() {
            try {
                return payload.read(envelope);
            } catch (Exception e) {
                throw new UnreadablePayload(e);
            }
        }

        /** @return the AMQP message-id, or null */
        public Object getMessageId() {
            return envelope.messageId();
        }

        /** @return the message */
        public Envelope getEnvelope() {
            return envelope;
        }
    }
}

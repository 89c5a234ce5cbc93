package org.acemq.amqp.spring.internal;

import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.spring.AcemqHeaders;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.converter.MessageConversionException;
import org.springframework.messaging.converter.MessageConverter;
import org.springframework.messaging.converter.SmartMessageConverter;

/**
 * Turns what a listener sends (its return value, or an argument of {@code AcemqSender}) into an
 * {@link OutgoingMessage}: an {@code OutgoingMessage} as it is; a Spring {@link Message} with its headers mapped to
 * AMQP fields ({@link AcemqHeaders}) and application properties; anything else as the body. A body AMQP carries as a
 * simple value (a String, bytes, a number, a Boolean, a Character, a UUID, an Instant) is sent as it is; any other
 * goes through the listener's message converters ({@code toMessage}), whose first answer gives the body and, unless
 * the message names its own, the content-type (JSON: {@code application/json}).
 */
final class OutgoingMessages {

    /** Spring's own headers, and those of its channels: never application properties. */
    private static final Set<String> SPRING_HEADERS = Set.of(MessageHeaders.ID, MessageHeaders.TIMESTAMP,
            MessageHeaders.CONTENT_TYPE, MessageHeaders.REPLY_CHANNEL, MessageHeaders.ERROR_CHANNEL);

    private final MessageConverter converter;

    /** @param converter the listener's message converters */
    OutgoingMessages(MessageConverter converter) {
        this.converter = converter;
    }

    /**
     * @param value an {@link OutgoingMessage}, a Spring {@link Message}, or a body; not null
     * @param hint a conversion hint for the converters (the method's return type), or null
     * @return the message to send
     * @throws IllegalArgumentException if a header has a value its AMQP field cannot take, or no converter writes the
     *     body
     * @throws MessageConversionException if a converter fails on the body
     */
    OutgoingMessage toOutgoing(Object value, Object hint) {
        if (value instanceof OutgoingMessage message) {
            return message;
        }
        if (value instanceof Message<?> message) {
            return fromSpring(message, hint);
        }
        return body(value, null, hint).build();
    }

    private OutgoingMessage fromSpring(Message<?> message, Object hint) {
        MessageHeaders headers = message.getHeaders();
        OutgoingMessage.Builder b = body(message.getPayload(), headers, hint);
        Object springContentType = headers.get(MessageHeaders.CONTENT_TYPE);
        if (springContentType != null && !headers.containsKey(AcemqHeaders.CONTENT_TYPE)) {
            b.contentType(springContentType.toString());
        }
        for (Map.Entry<String, Object> h : headers.entrySet()) {
            String name = h.getKey();
            Object v = h.getValue();
            if (v == null || SPRING_HEADERS.contains(name)) {
                continue;
            }
            switch (name) {
                case AcemqHeaders.SUBJECT -> b.subject(v.toString());
                case AcemqHeaders.CONTENT_TYPE -> b.contentType(v.toString());
                case AcemqHeaders.CORRELATION_ID -> b.correlationId(correlationId(v));
                case AcemqHeaders.REPLY_TO -> b.replyTo(v.toString());
                case AcemqHeaders.GROUP_ID -> b.groupId(v.toString());
                case AcemqHeaders.DURABLE -> b.durable(durable(v));
                case AcemqHeaders.TIME_TO_LIVE -> b.timeToLive(timeToLive(v));
                case AcemqHeaders.PRIORITY -> b.priority(priority(v));
                case AcemqHeaders.MESSAGE_ANNOTATIONS -> annotations(b, v);
                default -> {
                    // the received message's other fields (message-id, address, attempt, ...) describe that message,
                    // not this one: a Message built from the incoming one's headers must not carry them on
                    if (!name.startsWith(AcemqHeaders.PREFIX) && !name.startsWith("acemq_")) {
                        b.applicationProperty(name, v);
                    }
                }
            }
        }
        return b.build();
    }

    /** The body, as it is or converted; with the converter's content-type. */
    private OutgoingMessage.Builder body(Object payload, MessageHeaders headers, Object hint) {
        if (payload == null || simple(payload)) {
            return OutgoingMessage.builder(payload);
        }
        Message<?> converted = converter instanceof SmartMessageConverter smart
                ? smart.toMessage(payload, headers, hint) : converter.toMessage(payload, headers);
        if (converted == null) {
            throw new IllegalArgumentException("no message converter writes a " + payload.getClass().getName()
                    + " (add one with an AcemqMessageConverterCustomizer, or send an OutgoingMessage)");
        }
        OutgoingMessage.Builder b = OutgoingMessage.builder(converted.getPayload());
        Object contentType = converted.getHeaders().get(MessageHeaders.CONTENT_TYPE);
        if (contentType != null) {
            b.contentType(contentType.toString());
        }
        return b;
    }

    /** A value AMQP carries as it is. */
    private static boolean simple(Object v) {
        return v instanceof String || v instanceof byte[] || v instanceof Boolean || v instanceof Character
                || v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof Double || v instanceof Float || v instanceof UUID || v instanceof Instant;
    }

    /** The header's value in a type the AMQP correlation-id takes (the builder refuses the others). */
    private static Object correlationId(Object v) {
        if (v instanceof BigInteger big && big.signum() >= 0 && big.bitLength() <= 63) {
            return big.longValue();
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        return v;
    }

    private static boolean durable(Object v) {
        if (v instanceof Boolean b) {
            return b;
        }
        String s = v.toString().trim();
        if ("true".equalsIgnoreCase(s) || "false".equalsIgnoreCase(s)) {
            return Boolean.parseBoolean(s);
        }
        throw new IllegalArgumentException("header " + AcemqHeaders.DURABLE + " must be true or false, but was '"
                + v + "'");
    }

    private static Duration timeToLive(Object v) {
        if (v instanceof Duration d) {
            return d;
        }
        if (v instanceof Number n) {
            return Duration.ofMillis(n.longValue());
        }
        try {
            return DurationStyle.detectAndParse(v.toString().trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("header " + AcemqHeaders.TIME_TO_LIVE + " must be a Duration, a number "
                    + "of milliseconds or a duration such as 30s, but was '" + v + "'");
        }
    }

    private static Integer priority(Object v) {
        if (v instanceof Number n) {
            return n.intValue();
        }
        try {
            return Integer.valueOf(v.toString().trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("header " + AcemqHeaders.PRIORITY + " must be a number from 0 to 255, "
                    + "but was '" + v + "'");
        }
    }

    private static void annotations(OutgoingMessage.Builder b, Object v) {
        if (!(v instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("header " + AcemqHeaders.MESSAGE_ANNOTATIONS + " must be a Map, but was "
                    + "a " + v.getClass().getName());
        }
        map.forEach((k, value) -> b.annotation(String.valueOf(k), value));
    }
}

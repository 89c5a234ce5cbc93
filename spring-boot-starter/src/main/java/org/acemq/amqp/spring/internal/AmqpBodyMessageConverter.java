package org.acemq.amqp.spring.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.converter.SmartMessageConverter;

/**
 * What Spring's converters do not know about AMQP bodies: an {@code amqp-value} string read as {@code byte[]} (UTF-8),
 * and an {@code amqp-value} map or list (or an {@code amqp-sequence}) read as any type, by writing it as JSON with the
 * JSON converter and reading that back into the parameter's type (so the application's Jackson settings apply).
 * Reads only; returns null for anything else, so the next converter is tried.
 */
final class AmqpBodyMessageConverter implements SmartMessageConverter {

    private final SmartMessageConverter json;

    /** @param json the JSON converter, or null without Jackson (then maps and lists are left to the others) */
    AmqpBodyMessageConverter(SmartMessageConverter json) {
        this.json = json;
    }

    @Override
    public Object fromMessage(Message<?> message, Class<?> targetClass) {
        return fromMessage(message, targetClass, null);
    }

    @Override
    public Object fromMessage(Message<?> message, Class<?> targetClass, Object conversionHint) {
        Object payload = message.getPayload();
        if (payload instanceof String text && targetClass == byte[].class) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        if (json != null && (payload instanceof Map || payload instanceof List)) {
            Message<?> asJson = json.toMessage(payload, null);
            return asJson == null ? null : json.fromMessage(asJson, targetClass, conversionHint);
        }
        return null;
    }

    @Override
    public Message<?> toMessage(Object payload, MessageHeaders headers) {
        return null;
    }

    @Override
    public Message<?> toMessage(Object payload, MessageHeaders headers, Object conversionHint) {
        return null;
    }

    @Override
    public String toString() {
        return "AmqpBodyMessageConverter[json=" + json + "]";
    }
}

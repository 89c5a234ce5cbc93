package org.acemq.amqp.spring.internal;

import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.BodyConverter;
import org.springframework.core.ResolvableType;

/**
 * The default {@link BodyConverter}: the body itself when it has the type already, String and byte[] in UTF-8,
 * otherwise JSON through the application's Jackson mapper.
 */
final class DefaultBodyConverter implements BodyConverter {

    /** Reads JSON into a type; one implementation per Jackson generation, so that neither is needed. */
    interface JsonReader {
        Object read(byte[] json, Type type) throws Exception;

        Object read(String json, Type type) throws Exception;
    }

    private final JsonReader json;

    /** @param json the JSON reader, or null when the application has no Jackson */
    DefaultBodyConverter(JsonReader json) {
        this.json = json;
    }

    @Override
    public Object convert(Envelope envelope, Type targetType) throws Exception {
        Object body = envelope.body();
        Class<?> raw = ResolvableType.forType(targetType).toClass();
        if (body == null) {
            if (raw.isPrimitive()) {
                throw new IllegalArgumentException("the message has no body");
            }
            return null;
        }
        if (raw == String.class) {
            if (body instanceof byte[] bytes) {
                return new String(bytes, StandardCharsets.UTF_8);
            }
            if (body instanceof String) {
                return body;
            }
        } else if (raw == byte[].class) {
            if (body instanceof String text) {
                return text.getBytes(StandardCharsets.UTF_8);
            }
            if (body instanceof byte[]) {
                return body;
            }
        } else if (targetType instanceof Class<?> && raw.isInstance(body)) {
            return body;
        }
        if (json != null && body instanceof String text) {
            return json.read(text, targetType);
        }
        if (json != null && body instanceof byte[] bytes) {
            return json.read(bytes, targetType);
        }
        throw new IllegalArgumentException("the body is a " + body.getClass().getName()
                + (json == null ? " and no Jackson mapper is available for JSON" : ", not JSON text"));
    }

    @Override
    public String toString() {
        return "DefaultBodyConverter[json=" + json + "]";
    }
}

package org.acemq.amqp.consumer.internal;

import java.nio.charset.StandardCharsets;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/** The bytes a body hash is computed over: data bytes as they are, a string as UTF-8, anything else as text. */
final class BodyBytes {

    private BodyBytes() {
    }

    static byte[] of(Message<?> message) throws ClientException {
        Object body = message.body();
        if (body == null) {
            return new byte[0];
        }
        if (body instanceof byte[] bytes) {
            return bytes;
        }
        Object value = AmqpValues.toJdk(body);
        if (value instanceof byte[] bytes) {
            return bytes;
        }
        String text = value instanceof String s ? s : value.getClass().getName() + ":" + value;
        return text.getBytes(StandardCharsets.UTF_8);
    }
}

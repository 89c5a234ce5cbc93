package org.acemq.amqp.consumer.internal;

import java.nio.charset.StandardCharsets;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * The bytes a body hash is computed over (a fingerprint, or a key under {@code MissingIdPolicy.bodyHash()}): a
 * {@code data} section's bytes as they are, a string or symbol as UTF-8, an {@code amqp-value} binary as its bytes, no
 * body (or a null value) as no bytes; every other body as its {@linkplain BodyForm canonical form}.
 */
final class BodyBytes {

    private static final byte[] NONE = new byte[0];

    private BodyBytes() {
    }

    /**
     * @param message the decoded message
     * @param form its body's form as read from its encoding, or null if that could not be read (it is then computed
     *     from the decoded message)
     * @return the bytes to hash; not to be modified
     */
    static byte[] of(Message<?> message, BodyForm form) throws ClientException {
        BodyForm f = form != null ? form : BodyForm.of(message);
        if (f.canonical() != null) {
            return f.canonical();
        }
        Object body = message.body();
        if (body == null) {
            return NONE;
        }
        if (body instanceof byte[] bytes) {
            return bytes;
        }
        Object value = AmqpValues.toJdk(body); // a binary as byte[], a symbol as its text
        if (value instanceof byte[] bytes) {
            return bytes;
        }
        if (value instanceof String text) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        // the encoding said bytes or text, the decoded message says otherwise: hash what protonj2 decoded
        byte[] decoded = BodyForm.of(message).canonical();
        if (decoded == null) {
            throw new IllegalStateException("a body of " + body.getClass().getName() + " is neither bytes nor text");
        }
        return decoded;
    }
}

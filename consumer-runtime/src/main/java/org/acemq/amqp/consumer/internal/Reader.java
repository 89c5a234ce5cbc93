package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The read stage: decodes a delivery just taken from the client, finds its idempotency key, the content's
 * fingerprint and its ordering key, and builds the handler's envelope. It decides nothing: what is read is an
 * {@link Arrival}, and the policy decides from its facts.
 */
final class Reader {

    private static final Logger LOG = LoggerFactory.getLogger(Reader.class);

    private final String name;
    private final String address;
    private final Keys keys;

    Reader(String name, String address, Keys keys) {
        this.name = name;
        this.address = address;
        this.keys = keys;
    }

    /**
     * @param taken a delivery just taken from the client
     * @return what arrived: decoded, with its key, fingerprint, ordering key and envelope; or why it cannot be decoded
     */
    Arrival read(Arrival taken) {
        try {
            // before protonj2 decodes (and releases) the encoded message: make it one piece, and read the body's form
            ProtonBuffer encoded = ProtonInternals.wholePayload(taken.amqp());
            int size = encoded != null ? encoded.getReadableBytes() : -1;
            BodyForm body = encoded != null && keys.readsBody() ? BodyForm.scan(encoded) : null;
            Message<?> message = taken.amqp().message();
            if (size < 0) {
                size = keys.orders() ? encodedSize(message) : 0; // the size serves only the park of an ordered one
            }
            EnvelopeImpl envelope = EnvelopeImpl.of(null, address, message, 0);
            String key = keys.key(message, envelope, body);
            if (key == null) {
                return taken.read(message, null, null, null, null, size);
            }
            envelope.id(key);
            return taken.read(message, key, keys.fingerprint(message, body), keys.orderKey(message, envelope),
                    envelope, size);
        } catch (ClientException | RuntimeException e) {
            String error = Errors.describe(e);
            LOG.warn("Subscription '{}': a delivery cannot be decoded: {}", name, error);
            return taken.undecodable(error);
        }
    }

    /**
     * The size of a message whose encoded bytes could not be read before decoding (another protonj2 version or
     * delivery type): it is encoded again, which costs a copy, but only on that path and only for an ordered
     * subscription (whose park is bounded by bytes).
     *
     * @return its encoded size in bytes, or 0 if it cannot be encoded
     */
    static int encodedSize(Message<?> message) {
        try {
            ProtonBuffer again = message.toAdvancedMessage().encode(null);
            try {
                return again.getReadableBytes();
            } finally {
                again.close();
            }
        } catch (ClientException | RuntimeException e) {
            return 0;
        }
    }
}

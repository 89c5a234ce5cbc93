package org.acemq.amqp.consumer.internal;

import java.util.function.BooleanSupplier;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The read stage: decodes a delivery just taken from the client, finds its idempotency key (and the content's
 * fingerprint), and states the facts the policy decides on first. It decides nothing itself.
 */
final class Reader {

    private static final Logger LOG = LoggerFactory.getLogger(Reader.class);

    private final String name;
    private final String address;
    private final Keys keys;
    private final BooleanSupplier stopping;
    private final StoreGate gate;

    /**
     * @param stopping whether the subscription is stopping (the consumer closes, or the application stopped it)
     * @param gate whether the store is known to be down
     */
    Reader(String name, String address, Keys keys, BooleanSupplier stopping, StoreGate gate) {
        this.name = name;
        this.address = address;
        this.keys = keys;
        this.stopping = stopping;
        this.gate = gate;
    }

    /** @return the facts of the delivery just received (its message, key, envelope and fingerprint are set) */
    DeliveryFacts read(Delivery d) {
        String decodeError = null;
        try {
            // before protonj2 decodes (and releases) the encoded message: make it one piece, and read the body's form
            ProtonBuffer encoded = WholePayload.of(d.amqp);
            BodyForm body = encoded != null && keys.readsBody() ? BodyForm.scan(encoded) : null;
            Message<?> message = d.amqp.message();
            d.message = message;
            EnvelopeImpl envelope = EnvelopeImpl.of(null, address, message, 0);
            d.key = keys.key(message, envelope, body);
            if (d.key != null) {
                envelope.id(d.key);
                d.envelope = envelope;
                d.fingerprint = keys.fingerprint(message, body);
            }
        } catch (ClientException | RuntimeException e) {
            decodeError = Errors.describe(e);
            LOG.warn("Subscription '{}': a delivery cannot be decoded: {}", name, decodeError);
        }
        return DeliveryFacts.received(stopping.getAsBoolean(), decodeError, d.key != null, gate.paused());
    }
}

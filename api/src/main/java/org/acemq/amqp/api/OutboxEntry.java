package org.acemq.amqp.api;

import java.util.Objects;

/**
 * One message a handler sent, as a {@link OutboxStore} keeps it until it is dispatched: which incoming message sent
 * it, its position among that message's sends, its stable message-id, where it goes, and the message itself, encoded
 * as AMQP (the runtime encodes and decodes it; a store keeps the bytes as they are).
 *
 * @param incomingKey the idempotency key of the incoming message whose handler sent it ({@link Envelope#id()})
 * @param position its position among that handler's sends, from 0
 * @param messageId the message-id it carries (derived from {@code incomingKey} and {@code position})
 * @param address the address it is sent to
 * @param message the whole message, AMQP-encoded (header, properties, application properties, body)
 */
public record OutboxEntry(String incomingKey, int position, String messageId, String address, byte[] message) {

    /**
     * Validates the fields.
     *
     * @param incomingKey the incoming message's idempotency key; not null
     * @param position the send's position, {@code >= 0}
     * @param messageId its message-id; not null
     * @param address where it goes; not null or empty
     * @param message the AMQP-encoded message; not null
     */
    public OutboxEntry {
        Objects.requireNonNull(incomingKey, "incomingKey");
        Objects.requireNonNull(messageId, "messageId");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(message, "message");
        if (position < 0) {
            throw new IllegalArgumentException("position must be >= 0, but was " + position);
        }
        if (address.isEmpty()) {
            throw new IllegalArgumentException("address must not be empty");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutboxEntry e && position == e.position && incomingKey.equals(e.incomingKey)
                && messageId.equals(e.messageId) && address.equals(e.address)
                && java.util.Arrays.equals(message, e.message);
    }

    @Override
    public int hashCode() {
        return Objects.hash(incomingKey, position, messageId, address) * 31 + java.util.Arrays.hashCode(message);
    }

    @Override
    public String toString() {
        return "OutboxEntry[" + messageId + " to " + address + ", " + message.length + " bytes, from "
                + incomingKey + " #" + position + "]";
    }
}

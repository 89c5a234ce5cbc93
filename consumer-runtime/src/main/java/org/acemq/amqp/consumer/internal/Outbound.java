package org.acemq.amqp.consumer.internal;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.AdvancedMessage;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.UnsignedLong;
import org.apache.qpid.protonj2.types.messaging.AmqpValue;
import org.apache.qpid.protonj2.types.messaging.Data;

/**
 * One message a handler sent: where it goes, its stable message-id, and the protonj2 message built from the
 * application's {@link OutgoingMessage}. The id is derived from the incoming message's store key and the send's
 * position among the handler's sends, so a handler that runs again for the same message sends the same ids.
 *
 * @param incomingKey the store key of the incoming message
 * @param position its position among the handler's sends, from 0
 * @param messageId its message-id
 * @param address where it goes
 * @param message the message, ready to send
 */
record Outbound(String incomingKey, int position, String messageId, String address, Message<?> message) {

    /** The prefix of every message-id the runtime derives. */
    static final String ID_PREFIX = "acemq-";

    /**
     * @param incomingKey the incoming message's store key
     * @param position the send's position among the handler's sends
     * @return the stable message-id: {@code acemq-} and a UUID made of the first 128 bits of SHA-256 over both
     */
    static String messageId(String incomingKey, int position) {
        MessageDigest sha = MessageKeys.newSha256();
        sha.update(incomingKey.getBytes(StandardCharsets.UTF_8));
        sha.update((byte) 0);
        sha.update(Integer.toString(position).getBytes(StandardCharsets.US_ASCII));
        byte[] h = sha.digest();
        h[6] = (byte) ((h[6] & 0x0f) | 0x80); // version 8: a custom, name-based UUID
        h[8] = (byte) ((h[8] & 0x3f) | 0x80); // the RFC 4122 variant
        long hi = 0;
        long lo = 0;
        for (int i = 0; i < 8; i++) {
            hi = (hi << 8) | (h[i] & 0xff);
            lo = (lo << 8) | (h[i + 8] & 0xff);
        }
        return ID_PREFIX + new UUID(hi, lo);
    }

    /**
     * Builds the message to send.
     *
     * @param correlationId the correlation-id to set when the application set none (a reply's), or null
     * @param trace the incoming message's trace context, carried on when the application set no {@code traceparent}
     * @throws IllegalArgumentException if the body or a property is not an AMQP value
     */
    static Outbound of(String incomingKey, int position, String address, OutgoingMessage m, Object correlationId,
                       TraceContext trace) {
        String id = messageId(incomingKey, position);
        try {
            AdvancedMessage<Object> message = AdvancedMessage.create();
            Object body = m.body();
            if (body instanceof byte[] bytes) {
                message.addBodySection(new Data(bytes));
            } else if (body != null) {
                message.addBodySection(new AmqpValue<>(toAmqp(body, "body")));
            }
            message.messageId(id).to(address).durable(m.durable());
            if (m.timeToLive() != null) {
                message.timeToLive(m.timeToLive().toMillis());
            }
            if (m.priority() != null) {
                message.priority((byte) m.priority().intValue());
            }
            message.creationTime(System.currentTimeMillis());
            if (m.subject() != null) {
                message.subject(m.subject());
            }
            if (m.contentType() != null) {
                message.contentType(m.contentType());
            }
            Object correlation = m.correlationId() != null ? m.correlationId() : correlationId;
            if (correlation != null) {
                message.correlationId(idValue(correlation));
            }
            if (m.replyTo() != null) {
                message.replyTo(m.replyTo());
            }
            if (m.groupId() != null) {
                message.groupId(m.groupId());
            }
            for (Map.Entry<String, Object> p : m.applicationProperties().entrySet()) {
                message.property(p.getKey(), toAmqp(p.getValue(), "application property '" + p.getKey() + "'"));
            }
            if (trace != null && !m.applicationProperties().containsKey(TraceContext.TRACEPARENT)) {
                message.property(TraceContext.TRACEPARENT, trace.traceparent());
                if (trace.tracestate() != null) {
                    message.property(TraceContext.TRACESTATE, trace.tracestate());
                }
            }
            for (Map.Entry<String, Object> a : m.annotations().entrySet()) {
                message.annotation(a.getKey(), toAmqp(a.getValue(), "annotation '" + a.getKey() + "'"));
            }
            return new Outbound(incomingKey, position, id, address, message);
        } catch (ClientException e) {
            throw new IllegalArgumentException("cannot build the message to " + address + ": " + Errors.describe(e),
                    e);
        }
    }

    /** @return the message AMQP-encoded, for a store's outbox */
    OutboxEntry entry() {
        try {
            ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
            byte[] bytes = new byte[buffer.getReadableBytes()];
            buffer.readBytes(bytes, 0, bytes.length);
            return new OutboxEntry(incomingKey, position, messageId, address, bytes);
        } catch (ClientException e) {
            throw new IllegalStateException("cannot encode the message " + messageId + " to " + address + ": "
                    + Errors.describe(e), e);
        }
    }

    /**
     * @param entry a message from a store's outbox
     * @return it, decoded and ready to send again
     * @throws IllegalArgumentException if the bytes are not an AMQP message
     */
    static Outbound of(OutboxEntry entry) {
        try {
            Message<?> message = ProtonInternals.decode(entry.message());
            return new Outbound(entry.incomingKey(), entry.position(), entry.messageId(), entry.address(), message);
        } catch (ClientException | RuntimeException e) {
            throw new IllegalArgumentException("the outbox entry " + entry.messageId() + " is not an AMQP message: "
                    + Errors.describe(e), e);
        }
    }

    /** A correlation-id or message-id in its AMQP form. */
    private static Object idValue(Object id) {
        if (id instanceof byte[] bytes) {
            return new Binary(bytes);
        }
        if (id instanceof Long l) {
            return UnsignedLong.valueOf(l);
        }
        if (id instanceof BigInteger b) {
            return UnsignedLong.valueOf(b.longValue()); // a ulong above Long.MAX_VALUE, as it was received
        }
        return id; // String, UUID
    }

    /** A JDK value as protonj2 encodes it. */
    static Object toAmqp(Object v, String what) {
        if (v == null || v instanceof String || v instanceof Boolean || v instanceof Integer || v instanceof Long
                || v instanceof Short || v instanceof Byte || v instanceof Double || v instanceof Float
                || v instanceof Character || v instanceof UUID || v instanceof Symbol || v instanceof Binary
                || v instanceof Date || v instanceof java.math.BigDecimal) {
            if (v instanceof java.math.BigDecimal) {
                throw new IllegalArgumentException(what + " is a BigDecimal: send it as a String");
            }
            return v;
        }
        if (v instanceof byte[] bytes) {
            return new Binary(bytes);
        }
        if (v instanceof Instant instant) {
            return new Date(instant.toEpochMilli());
        }
        if (v instanceof Map<?, ?> map) {
            Map<Object, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.put(toAmqp(e.getKey(), what + " (a key)"), toAmqp(e.getValue(), what));
            }
            return out;
        }
        if (v instanceof List<?> list) {
            List<Object> out = new ArrayList<>(list.size());
            for (Object e : list) {
                out.add(toAmqp(e, what));
            }
            return out;
        }
        throw new IllegalArgumentException(what + " is a " + v.getClass().getName()
                + ", which AMQP cannot carry (use String, a number, Boolean, UUID, Instant, byte[], or a Map or List"
                + " of them)");
    }
}

package org.acemq.amqp.spring.internal;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.spring.AcemqHeaders;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.support.GenericMessage;

/**
 * A received message as Spring Messaging sees it: the payload is the decoded AMQP body ({@code String},
 * {@code byte[]}, {@code Map}, {@code List}, a number, ...; {@link Optional#empty()} when there is none, since a
 * Spring message cannot hold null), the headers are the application properties and the AMQP fields under
 * {@link AcemqHeaders}' names, and the {@link Envelope} travels with it for the {@code Envelope} parameters.
 */
final class EnvelopeMessage extends GenericMessage<Object> {

    private static final long serialVersionUID = 1L;

    /** Not serialised: a message lives for one handler call. */
    private final transient Envelope envelope;

    private EnvelopeMessage(Object payload, MessageHeaders headers, Envelope envelope) {
        super(payload, headers);
        this.envelope = envelope;
    }

    /**
     * @param envelope a received message
     * @return it as a Spring message
     */
    static EnvelopeMessage of(Envelope envelope) {
        Map<String, Object> headers = new HashMap<>(envelope.applicationProperties());
        put(headers, AcemqHeaders.MESSAGE_ID, envelope.messageId());
        put(headers, AcemqHeaders.CORRELATION_ID, envelope.correlationId());
        put(headers, AcemqHeaders.SUBJECT, envelope.subject());
        put(headers, AcemqHeaders.CONTENT_TYPE, envelope.contentType());
        put(headers, AcemqHeaders.REPLY_TO, envelope.replyTo());
        put(headers, AcemqHeaders.GROUP_ID, envelope.groupId());
        put(headers, AcemqHeaders.CREATION_TIME, envelope.creationTime());
        put(headers, AcemqHeaders.ADDRESS, envelope.address());
        headers.put(AcemqHeaders.DELIVERY_COUNT, envelope.deliveryCount());
        headers.put(AcemqHeaders.FIRST_ACQUIRER, envelope.firstAcquirer());
        if (!envelope.annotations().isEmpty()) {
            headers.put(AcemqHeaders.MESSAGE_ANNOTATIONS, envelope.annotations());
        }
        put(headers, AcemqHeaders.IDEMPOTENCY_KEY, envelope.id());
        headers.put(AcemqHeaders.ATTEMPT, envelope.attempt());
        Object body = envelope.body();
        return new EnvelopeMessage(body == null ? Optional.empty() : body, new Headers(headers), envelope);
    }

    private static void put(Map<String, Object> headers, String name, Object value) {
        if (value != null) {
            headers.put(name, value);
        }
    }

    /** @return the message */
    Envelope envelope() {
        return envelope;
    }

    /** @return true if the message has no body */
    static boolean isNoBody(Object payload) {
        return payload instanceof Optional<?> optional && optional.isEmpty();
    }

    /** Short: the default would print the whole body into every conversion error and rejection description. */
    @Override
    public String toString() {
        return "AMQP message " + envelope.messageId() + " from " + envelope.address();
    }

    /** Headers without Spring's generated {@code id} and {@code timestamp}: an AMQP message has its own. */
    private static final class Headers extends MessageHeaders {
        private static final long serialVersionUID = 1L;

        Headers(Map<String, Object> headers) {
            super(headers, ID_VALUE_NONE, -1L);
        }
    }
}

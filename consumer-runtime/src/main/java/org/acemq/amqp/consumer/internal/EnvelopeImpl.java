package org.acemq.amqp.consumer.internal;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * The handler's view of a decoded protonj2 message. Everything is read eagerly on the handler thread, before the key is
 * claimed; the attempt number is filled in once the store answered.
 */
final class EnvelopeImpl implements Envelope {

    static final String DECODE_ERROR = org.acemq.amqp.consumer.RejectionConditions.DECODE_ERROR;

    private String id;
    private final Object messageId;
    private final String address;
    private final Object body;
    private final Object correlationId;
    private final String subject;
    private final String contentType;
    private final String replyTo;
    private final Instant creationTime;
    private final Map<String, Object> applicationProperties;
    private final Map<String, Object> annotations;
    private final long deliveryCount;
    private final boolean firstAcquirer;
    private int attempt;

    private EnvelopeImpl(String id, Object messageId, String address, Object body, Object correlationId,
                         String subject, String contentType, String replyTo, Instant creationTime,
                         Map<String, Object> applicationProperties, Map<String, Object> annotations,
                         long deliveryCount, boolean firstAcquirer, int attempt) {
        this.id = id;
        this.messageId = messageId;
        this.address = address;
        this.body = body;
        this.correlationId = correlationId;
        this.subject = subject;
        this.contentType = contentType;
        this.replyTo = replyTo;
        this.creationTime = creationTime;
        this.applicationProperties = applicationProperties;
        this.annotations = annotations;
        this.deliveryCount = deliveryCount;
        this.firstAcquirer = firstAcquirer;
        this.attempt = attempt;
    }

    static EnvelopeImpl of(String id, String address, Message<?> message, int attempt) throws ClientException {
        // Most messages carry no application properties or annotations: skip the maps (and their wrappers) then.
        Map<String, Object> props = Collections.emptyMap();
        if (message.hasProperties()) {
            Map<String, Object> copy = new LinkedHashMap<>();
            message.forEachProperty((k, v) -> copy.put(k, AmqpValues.toJdk(v)));
            props = Collections.unmodifiableMap(copy);
        }
        Map<String, Object> annotations = Collections.emptyMap();
        if (message.hasAnnotations()) {
            Map<String, Object> copy = new LinkedHashMap<>();
            message.forEachAnnotation((k, v) -> copy.put(k, AmqpValues.toJdk(v)));
            annotations = Collections.unmodifiableMap(copy);
        }
        return new EnvelopeImpl(id, AmqpValues.toJdk(message.messageId()), address, AmqpValues.toJdk(message.body()),
                AmqpValues.toJdk(message.correlationId()), message.subject(), message.contentType(),
                message.replyTo(), AmqpValues.timestamp(message.creationTime()), props, annotations,
                message.deliveryCount(), message.firstAcquirer(), attempt);
    }

    /** Sets the key once it is known (a key function reads the envelope to find it). */
    void id(String key) {
        this.id = key;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public Object messageId() {
        return messageId;
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public Object body() {
        return body;
    }

    @Override
    public <T> T body(Class<T> type) {
        if (body != null && !type.isInstance(body)) {
            throw new PermanentMessageException(DECODE_ERROR, "body is " + body.getClass().getName() + ", not "
                    + type.getName(), null);
        }
        return type.cast(body);
    }

    @Override
    public Object correlationId() {
        return correlationId;
    }

    @Override
    public String subject() {
        return subject;
    }

    @Override
    public String contentType() {
        return contentType;
    }

    @Override
    public String replyTo() {
        return replyTo;
    }

    @Override
    public Instant creationTime() {
        return creationTime;
    }

    @Override
    public Map<String, Object> applicationProperties() {
        return applicationProperties;
    }

    @Override
    public Map<String, Object> annotations() {
        return annotations;
    }

    @Override
    public long deliveryCount() {
        return deliveryCount;
    }

    @Override
    public boolean firstAcquirer() {
        return firstAcquirer;
    }

    @Override
    public int attempt() {
        return attempt;
    }

    /** Sets the attempt once the store answered, before the handler sees the envelope (same thread). */
    void attempt(int attempt) {
        this.attempt = attempt;
    }

    @Override
    public String toString() {
        return "Envelope[id=" + id + ", address=" + address + ", attempt=" + attempt + "]";
    }
}

package org.acemq.amqp.spring.internal;

import java.time.Instant;
import java.util.Map;
import org.acemq.amqp.api.Envelope;

/** A message as a handler sees it, for calling handlers directly. */
record TestEnvelope(String id, int attempt, Object body, Map<String, Object> applicationProperties)
        implements Envelope {

    TestEnvelope(String id, int attempt) {
        this(id, attempt, null);
    }

    TestEnvelope(String id, int attempt, Object body) {
        this(id, attempt, body, Map.of());
    }

    @Override
    public Object messageId() {
        return id.startsWith("s:") ? id.substring(2) : id;
    }

    @Override
    public String address() {
        return "test";
    }

    @Override
    public <T> T body(Class<T> type) {
        return type.cast(body);
    }

    @Override
    public Object correlationId() {
        return null;
    }

    @Override
    public String subject() {
        return null;
    }

    @Override
    public String contentType() {
        return null;
    }

    @Override
    public String replyTo() {
        return null;
    }

    @Override
    public Instant creationTime() {
        return null;
    }

    @Override
    public Map<String, Object> annotations() {
        return Map.of();
    }

    @Override
    public long deliveryCount() {
        return attempt - 1L;
    }

    @Override
    public boolean firstAcquirer() {
        return attempt == 1;
    }
}

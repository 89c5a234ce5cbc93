package org.acemq.amqp.api;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A message a handler sends with {@link Envelope#send(String, OutgoingMessage)} or {@link Envelope#reply}: its body
 * and the AMQP properties an application sets. Immutable; build one with {@link #builder(Object)} or
 * {@link #of(Object)}.
 *
 * <p><b>The message-id is not set here.</b> The runtime gives every message a handler sends a <em>stable</em> id,
 * derived from the incoming message's idempotency key ({@link Envelope#id()}) and the send's position within the
 * handler call (first send, second send, ...). A handler that runs again for the same incoming message (after a crash
 * before its confirm, or a failed attempt) sends messages with the same ids, so an idempotent receiver (an AceMQ
 * consumer keyed by message-id, the default) absorbs the repeat. Keep the order of a handler's sends the same on
 * every run of one message.
 *
 * <p><b>Body.</b> A {@code byte[]} is sent as one {@code data} section; anything else (a {@link String}, a number, a
 * {@link Boolean}, a {@link java.util.UUID}, a {@link java.time.Instant} as an AMQP timestamp, a {@link Map} or a
 * {@link java.util.List} of such values, null) as an {@code amqp-value} section. A value the AMQP type system cannot
 * carry fails the send with an {@link IllegalArgumentException} in the handler.
 *
 * <p><b>Defaults.</b> Durable (the broker keeps it across a restart), no time-to-live, the broker's default
 * priority.
 */
public final class OutgoingMessage {

    private final Object body;
    private final String subject;
    private final String contentType;
    private final Object correlationId;
    private final String replyTo;
    private final String groupId;
    private final Map<String, Object> applicationProperties;
    private final Map<String, Object> annotations;
    private final boolean durable;
    private final Duration timeToLive;
    private final Integer priority;

    private OutgoingMessage(Builder b) {
        this.body = b.body;
        this.subject = b.subject;
        this.contentType = b.contentType;
        this.correlationId = b.correlationId;
        this.replyTo = b.replyTo;
        this.groupId = b.groupId;
        this.applicationProperties = Collections.unmodifiableMap(new LinkedHashMap<>(b.applicationProperties));
        this.annotations = Collections.unmodifiableMap(new LinkedHashMap<>(b.annotations));
        this.durable = b.durable;
        this.timeToLive = b.timeToLive;
        this.priority = b.priority;
    }

    /**
     * @param body the body (see the class documentation), or null for none
     * @return a durable message with that body and nothing else set
     */
    public static OutgoingMessage of(Object body) {
        return builder(body).build();
    }

    /**
     * @param body the body (see the class documentation), or null for none
     * @return a builder for a message with that body
     */
    public static Builder builder(Object body) {
        return new Builder(body);
    }

    /** @return a builder holding everything this message holds */
    public Builder toBuilder() {
        Builder b = new Builder(body).subject(subject).contentType(contentType).correlationId(correlationId)
                .replyTo(replyTo).groupId(groupId).durable(durable).timeToLive(timeToLive).priority(priority);
        b.applicationProperties.putAll(applicationProperties);
        b.annotations.putAll(annotations);
        return b;
    }

    /** @return the body, or null */
    public Object body() {
        return body;
    }

    /** @return the AMQP subject, or null */
    public String subject() {
        return subject;
    }

    /** @return the AMQP content-type, or null */
    public String contentType() {
        return contentType;
    }

    /** @return the AMQP correlation-id (String, UUID, Long or byte[]), or null */
    public Object correlationId() {
        return correlationId;
    }

    /** @return the AMQP reply-to address, or null */
    public String replyTo() {
        return replyTo;
    }

    /** @return the AMQP group-id (what Artemis message groups and ordered AceMQ subscriptions key on), or null */
    public String groupId() {
        return groupId;
    }

    /** @return the application properties, in the order they were set; never null, unmodifiable */
    public Map<String, Object> applicationProperties() {
        return applicationProperties;
    }

    /** @return the message annotations (keys are sent as AMQP symbols); never null, unmodifiable */
    public Map<String, Object> annotations() {
        return annotations;
    }

    /** @return whether the message is durable (the default) */
    public boolean durable() {
        return durable;
    }

    /** @return the time-to-live, or null for none */
    public Duration timeToLive() {
        return timeToLive;
    }

    /** @return the priority (0-255), or null for the broker's default */
    public Integer priority() {
        return priority;
    }

    @Override
    public String toString() {
        return "OutgoingMessage[body=" + (body == null ? "none" : body.getClass().getSimpleName())
                + (subject == null ? "" : ", subject=" + subject) + (durable ? "" : ", non-durable") + "]";
    }

    /** Builds an {@link OutgoingMessage}. Not thread-safe. */
    public static final class Builder {

        private final Object body;
        private String subject;
        private String contentType;
        private Object correlationId;
        private String replyTo;
        private String groupId;
        private final Map<String, Object> applicationProperties = new LinkedHashMap<>();
        private final Map<String, Object> annotations = new LinkedHashMap<>();
        private boolean durable = true;
        private Duration timeToLive;
        private Integer priority;

        private Builder(Object body) {
            this.body = body;
        }

        /**
         * @param subject the AMQP subject, or null
         * @return this builder
         */
        public Builder subject(String subject) {
            this.subject = subject;
            return this;
        }

        /**
         * @param contentType the AMQP content-type (for example {@code application/json}), or null
         * @return this builder
         */
        public Builder contentType(String contentType) {
            this.contentType = contentType;
            return this;
        }

        /**
         * @param correlationId the AMQP correlation-id: a String, UUID, Long (an AMQP ulong, so not negative) or
         *     byte[]; null for none. {@link Envelope#reply} sets it from the request unless it is set here.
         * @return this builder
         * @throws IllegalArgumentException if it is of another type, or a negative Long
         */
        public Builder correlationId(Object correlationId) {
            if (correlationId != null && !(correlationId instanceof String || correlationId instanceof java.util.UUID
                    || correlationId instanceof byte[] || correlationId instanceof Long)) {
                throw new IllegalArgumentException("correlationId must be a String, UUID, Long or byte[], but was a "
                        + correlationId.getClass().getName());
            }
            if (correlationId instanceof Long l && l < 0) {
                throw new IllegalArgumentException("correlationId as a Long is an AMQP ulong and must be >= 0, but was "
                        + l);
            }
            this.correlationId = correlationId;
            return this;
        }

        /**
         * @param replyTo the AMQP reply-to address for an answer to this message, or null
         * @return this builder
         */
        public Builder replyTo(String replyTo) {
            this.replyTo = replyTo;
            return this;
        }

        /**
         * @param groupId the AMQP group-id, or null
         * @return this builder
         */
        public Builder groupId(String groupId) {
            this.groupId = groupId;
            return this;
        }

        /**
         * @param name the application property's name; not null or empty
         * @param value its value (an AMQP simple type: String, number, Boolean, UUID, Instant, byte[]), or null
         * @return this builder
         */
        public Builder applicationProperty(String name, Object value) {
            Objects.requireNonNull(name, "application property name must not be null");
            if (name.isEmpty()) {
                throw new IllegalArgumentException("application property name must not be empty");
            }
            applicationProperties.put(name, value);
            return this;
        }

        /**
         * @param properties application properties to add (see {@link #applicationProperty})
         * @return this builder
         */
        public Builder applicationProperties(Map<String, ?> properties) {
            properties.forEach(this::applicationProperty);
            return this;
        }

        /**
         * @param name the annotation's key (sent as an AMQP symbol; brokers reserve {@code x-opt-} keys for
         *     themselves, so use your own prefix); not null or empty
         * @param value its value, or null
         * @return this builder
         */
        public Builder annotation(String name, Object value) {
            Objects.requireNonNull(name, "annotation name must not be null");
            if (name.isEmpty()) {
                throw new IllegalArgumentException("annotation name must not be empty");
            }
            annotations.put(name, value);
            return this;
        }

        /**
         * @param durable whether the broker keeps the message across a restart (default true)
         * @return this builder
         */
        public Builder durable(boolean durable) {
            this.durable = durable;
            return this;
        }

        /**
         * @param timeToLive how long the message may live before the broker discards it, or null for none
         * @return this builder
         * @throws IllegalArgumentException if it is zero or negative, or longer than 2^32-1 milliseconds (the AMQP
         *     header's limit)
         */
        public Builder timeToLive(Duration timeToLive) {
            if (timeToLive != null && (timeToLive.isNegative() || timeToLive.isZero()
                    || timeToLive.toMillis() > 0xFFFF_FFFFL)) {
                throw new IllegalArgumentException("timeToLive must be > 0 and <= 4294967295 ms, but was "
                        + timeToLive);
            }
            this.timeToLive = timeToLive;
            return this;
        }

        /**
         * @param priority 0-255, or null for the broker's default
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder priority(Integer priority) {
            if (priority != null && (priority < 0 || priority > 255)) {
                throw new IllegalArgumentException("priority must be between 0 and 255, but was " + priority);
            }
            this.priority = priority;
            return this;
        }

        /** @return the message */
        public OutgoingMessage build() {
            return new OutgoingMessage(this);
        }
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.api.PermanentMessageException;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * The handler's view of a decoded protonj2 message. Everything is read eagerly on the handler thread, before the key is
 * claimed; the attempt number is filled in once the store answered.
 */
final class EnvelopeImpl implements Envelope, OutboxCapture {

    static final String DECODE_ERROR = org.acemq.amqp.consumer.RejectionConditions.DECODE_ERROR;

    private String id;
    private final Object messageId;
    private final String address;
    private final Object body;
    private final Object correlationId;
    private final String subject;
    private final String contentType;
    private final String replyTo;
    private final String groupId;
    private final Instant creationTime;
    private final Map<String, Object> applicationProperties;
    private final Map<String, Object> annotations;
    private final long deliveryCount;
    private final boolean firstAcquirer;
    private int attempt;
    /** What the handler sent, in order; null until it sends. Written and read on the handler's thread. */
    private List<Outbound> sends;
    /** The trace context of the incoming message, carried on to what the handler sends; null if none. */
    private TraceContext trace;
    /** Whether the handler runs now (sends are taken only then). */
    private boolean open;
    /** What the handler's transaction did with the sends ({@link OutboxCapture}). */
    private Outbox outbox = Outbox.NONE;
    /** The sends as the store's transactional handler read them to write them, or null. */
    private List<OutboxEntry> entries;

    /** What a store's transactional handler did with the sends. */
    enum Outbox {
        /** Nothing: the runtime sends them itself. */
        NONE,
        /** Written to the store's outbox in the transaction that committed: the runtime dispatches them from there. */
        STORED,
        /** The transaction was rolled back (another owner committed first): nothing is sent. */
        DISCARDED
    }

    private EnvelopeImpl(String id, Object messageId, String address, Object body, Object correlationId,
                         String subject, String contentType, String replyTo, String groupId, Instant creationTime,
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
        this.groupId = groupId;
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
                message.replyTo(), message.groupId(), AmqpValues.timestamp(message.creationTime()), props, annotations,
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
    public String groupId() {
        return groupId;
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

    // ------------------------------------------------------------------ sending

    /** The handler is about to run: sends are taken from now until {@link #close()}. */
    void open(TraceContext trace) {
        this.trace = trace;
        this.sends = null;
        this.entries = null;
        this.outbox = Outbox.NONE;
        this.open = true;
    }

    /** The handler returned or threw: no more sends. */
    void close() {
        open = false;
    }

    @Override
    public String send(String address, OutgoingMessage message) {
        Objects.requireNonNull(address, "address must not be null");
        Objects.requireNonNull(message, "message must not be null");
        if (address.isEmpty()) {
            throw new IllegalArgumentException("address must not be empty");
        }
        return add(address, message, null);
    }

    @Override
    public String reply(OutgoingMessage message) {
        Objects.requireNonNull(message, "message must not be null");
        if (replyTo == null || replyTo.isEmpty()) {
            throw new IllegalStateException("message " + id + " has no reply-to address to answer");
        }
        return add(replyTo, message, correlationId != null ? correlationId : messageId);
    }

    private String add(String address, OutgoingMessage message, Object correlation) {
        if (!open) {
            throw new IllegalStateException("message " + id + ": send or reply only while its handler runs");
        }
        if (outbox != Outbox.NONE) {
            throw new IllegalStateException("message " + id + ": its sends were already written to the outbox");
        }
        if (sends == null) {
            sends = new ArrayList<>(2);
        }
        Outbound out = Outbound.of(id, sends.size(), address, message, correlation, trace);
        sends.add(out);
        return out.messageId();
    }

    /** @return what the handler sent, in order (empty if nothing) */
    List<Outbound> sends() {
        return sends == null ? List.of() : sends;
    }

    /** @return what the handler's transaction did with the sends */
    Outbox outbox() {
        return outbox;
    }

    @Override
    public List<OutboxEntry> outboxEntries() {
        List<OutboxEntry> read = new ArrayList<>(sends().size());
        for (Outbound out : sends()) {
            read.add(out.entry());
        }
        entries = List.copyOf(read);
        return entries;
    }

    @Override
    public void outboxStored() {
        if (entries == null || entries.size() != sends().size()) {
            throw new IllegalStateException("message " + id + ": the handler sent " + sends().size() + " message(s), but "
                    + (entries == null ? "none were" : entries.size() + " were") + " read to be written to the outbox");
        }
        outbox = Outbox.STORED;
    }

    /** @return the entries written to the store's outbox ({@link Outbox#STORED}), in send order */
    List<OutboxEntry> storedEntries() {
        return entries == null ? List.of() : entries;
    }

    @Override
    public void outboxDiscarded() {
        outbox = Outbox.DISCARDED;
    }

    @Override
    public String toString() {
        return "Envelope[id=" + id + ", address=" + address + ", attempt=" + attempt + "]";
    }
}

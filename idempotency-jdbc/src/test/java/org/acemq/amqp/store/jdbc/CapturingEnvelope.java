package org.acemq.amqp.store.jdbc;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;

/**
 * The envelope side of the outbox for these tests, as the runtime's envelope plays it: {@link #send} records an entry
 * with a stable message-id ({@code <id>/<position>}) and "encodes" the body (a {@code byte[]} as it is, anything else
 * as its UTF-8 text); the {@link OutboxCapture} calls are counted, and a send after the entries were read (or after
 * the handler ended) is refused as the runtime refuses it.
 */
class CapturingEnvelope implements Envelope, OutboxCapture {

    private final String id;
    private final int attempt;
    private final List<OutboxEntry> sent = new ArrayList<>();
    private int read = -1;
    int stored;
    int discarded;

    CapturingEnvelope(String id, int attempt) {
        this.id = id;
        this.attempt = attempt;
    }

    @Override
    public synchronized String send(String address, OutgoingMessage message) {
        if (stored + discarded > 0) {
            throw new IllegalStateException("the handler returned");
        }
        Object body = message.body();
        byte[] bytes = body instanceof byte[] b ? b : String.valueOf(body).getBytes(StandardCharsets.UTF_8);
        int position = sent.size();
        OutboxEntry entry = new OutboxEntry(id, position, id + "/" + position, address, bytes);
        sent.add(entry);
        return entry.messageId();
    }

    /** Sends {@code body} to {@code address}. */
    String send(String address, Object body) {
        return send(address, OutgoingMessage.of(body));
    }

    @Override
    public synchronized List<OutboxEntry> outboxEntries() {
        read = sent.size();
        return List.copyOf(sent);
    }

    @Override
    public synchronized void outboxStored() {
        if (read != sent.size()) {
            throw new IllegalStateException("sent more after the entries were read");
        }
        stored++;
    }

    @Override
    public synchronized void outboxDiscarded() {
        discarded++;
    }

    synchronized List<OutboxEntry> sent() {
        return List.copyOf(sent);
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public int attempt() {
        return attempt;
    }

    @Override
    public Object messageId() {
        return id;
    }

    @Override
    public String address() {
        return "orders";
    }

    @Override
    public Object body() {
        return "body";
    }

    @Override
    public <T> T body(Class<T> type) {
        return type.cast(body());
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
    public Map<String, Object> applicationProperties() {
        return Map.of();
    }

    @Override
    public Map<String, Object> annotations() {
        return Map.of();
    }

    @Override
    public long deliveryCount() {
        return 0;
    }

    @Override
    public boolean firstAcquirer() {
        return false;
    }
}

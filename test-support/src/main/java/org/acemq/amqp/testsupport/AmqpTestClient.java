package org.acemq.amqp.testsupport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.UnsignedLong;

/**
 * A small protonj2 helper for <em>tests</em> (not the product): fills queues, reads dead-letter queues and
 * checks for leftovers. One connection (no reconnect) per instance; each call opens and closes its own
 * link. Every operation is synchronous and throws the unchecked {@link AmqpTestClientException}.
 *
 * <p>Message ids may be of any AMQP message-id type: {@link String}, {@link UUID}, {@link Long}/{@link Integer}
 * (sent as ulong, {@link UnsignedLong}), {@link UnsignedLong}, {@code byte[]} (sent as {@link Binary}) or
 * {@link Binary}. Received ids are returned as protonj2 decodes them: String, UUID, UnsignedLong or Binary.
 *
 * <p>Not thread-safe; use one instance per thread.
 */
public final class AmqpTestClient implements AutoCloseable {

    /** Default bound on how long one send, receive or drain may take. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    private static final int DRAIN_BATCH = 1000;

    private final Client client;
    private final Connection connection;
    private Duration timeout = DEFAULT_TIMEOUT;

    private AmqpTestClient(String host, int port, String user, String password) {
        ConnectionOptions options = new ConnectionOptions();
        if (user != null) {
            options.user(user).password(password);
        }
        this.client = Client.create();
        try {
            this.connection = client.connect(host, port, options);
            connection.openFuture().get(DEFAULT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            client.close();
            throw wrap("cannot connect to " + host + ":" + port, e);
        }
    }

    /**
     * Connects to the broker, with its credentials if it requires them.
     *
     * @param broker a started broker
     * @return a connected client; close it
     */
    public static AmqpTestClient connect(EmbeddedArtemis broker) {
        return new AmqpTestClient(broker.host(), broker.port(), broker.user(), broker.password());
    }

    /**
     * Connects anonymously (SASL ANONYMOUS or none).
     *
     * @param host the broker's host
     * @param port the broker's AMQP port
     * @return a connected client; close it
     */
    public static AmqpTestClient connect(String host, int port) {
        return new AmqpTestClient(host, port, null, null);
    }

    /**
     * Connects with SASL PLAIN credentials.
     *
     * @param host the broker's host
     * @param port the broker's AMQP port
     * @param user the user name
     * @param password the password
     * @return a connected client; close it
     */
    public static AmqpTestClient connect(String host, int port, String user, String password) {
        return new AmqpTestClient(host, port, Objects.requireNonNull(user, "user"),
                Objects.requireNonNull(password, "password"));
    }

    /**
     * Changes the per-operation timeout.
     *
     * @param timeout how long one send, receive or drain may take (default {@link #DEFAULT_TIMEOUT})
     * @return this client
     */
    public AmqpTestClient timeout(Duration timeout) {
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /** @return the underlying protonj2 connection, for anything not covered here */
    public Connection connection() {
        return connection;
    }

    /**
     * A durable message with this id and body.
     *
     * @param messageId any AMQP message-id type (see the class documentation), or null for none
     * @param body the body: {@code byte[]} is sent as a Data section, anything else as an AmqpValue
     * @return the message spec, to which application properties can be added
     */
    public static MessageSpec message(Object messageId, Object body) {
        return new MessageSpec(messageId, body);
    }

    /**
     * A durable message with this body and no message id.
     *
     * @param body the body
     * @return the message spec
     */
    public static MessageSpec message(Object body) {
        return new MessageSpec(null, body);
    }

    // ------------------------------------------------------------------------------------------------
    // sending

    /**
     * Sends the messages on one sender link, pipelined, and waits until the broker has accepted every one.
     *
     * @param address the address (queue) to send to
     * @param messages what to send
     * @throws AmqpTestClientException if a message is not accepted within the timeout
     */
    public void send(String address, MessageSpec... messages) {
        send(address, Arrays.asList(messages));
    }

    /**
     * As {@link #send(String, MessageSpec...)}.
     *
     * @param address the address (queue) to send to
     * @param messages what to send
     * @throws AmqpTestClientException if a message is not accepted within the timeout
     */
    public void send(String address, List<MessageSpec> messages) {
        try (Sender sender = connection.openSender(address)) {
            List<Tracker> trackers = new ArrayList<>(messages.size());
            for (MessageSpec spec : messages) {
                trackers.add(sender.send(spec.toMessage()));
            }
            awaitAccepted(trackers);
        } catch (ClientException e) {
            throw wrap("send to " + address + " failed", e);
        }
    }

    /**
     * Sends {@code count} durable messages, pipelined (all sends first, then waits for all acceptances).
     * Message {@code i} (0-based) has id {@code idFunction.apply(i)} (any id type, {@code null} = no id)
     * and the String body {@code "message-" + i}.
     *
     * @param address the address (queue) to send to
     * @param count how many messages
     * @param idFunction the message id of message {@code i}
     * @throws AmqpTestClientException if a message is not accepted within the timeout
     */
    public void sendBatch(String address, int count, IntFunction<?> idFunction) {
        sendBatch(address, count, idFunction, i -> "message-" + i);
    }

    /**
     * As {@link #sendBatch(String, int, IntFunction)} with a body per message.
     *
     * @param address the address (queue) to send to
     * @param count how many messages
     * @param idFunction the message id of message {@code i}
     * @param bodyFunction the body of message {@code i}
     * @throws AmqpTestClientException if a message is not accepted within the timeout
     */
    public void sendBatch(String address, int count, IntFunction<?> idFunction, IntFunction<?> bodyFunction) {
        try (Sender sender = connection.openSender(address)) {
            List<Tracker> trackers = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                trackers.add(sender.send(new MessageSpec(idFunction.apply(i), bodyFunction.apply(i)).toMessage()));
            }
            awaitAccepted(trackers);
        } catch (ClientException e) {
            throw wrap("sendBatch to " + address + " failed", e);
        }
    }

    private void awaitAccepted(List<Tracker> trackers) throws ClientException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Tracker t : trackers) {
            long left = Math.max(1, deadline - System.nanoTime());
            t.awaitAccepted(left, TimeUnit.NANOSECONDS);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // receiving

    /**
     * Receives and accepts messages until none arrives for {@code idleTimeout}; returns them in arrival
     * order. Messages held back by a redelivery delay are picked up if they come back within the idle time.
     *
     * @param address the queue to read
     * @param idleTimeout how long to wait for one more message before returning
     * @return the messages received, in arrival order
     */
    public List<ReceivedMessage> receiveAll(String address, Duration idleTimeout) {
        List<ReceivedMessage> result = new ArrayList<>();
        ReceiverOptions options = new ReceiverOptions().autoAccept(false).creditWindow(100);
        try (Receiver receiver = connection.openReceiver(address, options)) {
            receiver.openFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            Delivery d;
            while ((d = receiver.receive(idleTimeout.toMillis(), TimeUnit.MILLISECONDS)) != null) {
                result.add(ReceivedMessage.of(d));
                d.accept();
            }
        } catch (ClientException | InterruptedException | ExecutionException | TimeoutException e) {
            throw wrap("receiveAll from " + address + " failed", e);
        }
        return result;
    }

    /**
     * Receives and accepts exactly {@code count} messages.
     *
     * @param address the queue to read
     * @param count how many messages to take
     * @param timeout how long all of them may take to arrive
     * @return the messages, in arrival order
     * @throws AmqpTestClientException if fewer arrive within {@code timeout}
     */
    public List<ReceivedMessage> receive(String address, int count, Duration timeout) {
        List<ReceivedMessage> result = new ArrayList<>(count);
        ReceiverOptions options = new ReceiverOptions().autoAccept(false).creditWindow(0);
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Receiver receiver = connection.openReceiver(address, options)) {
            if (count > 0) {
                receiver.addCredit(count);
            }
            while (result.size() < count) {
                long left = deadline - System.nanoTime();
                Delivery d = left <= 0 ? null : receiver.receive(left, TimeUnit.NANOSECONDS);
                if (d == null) {
                    throw new AmqpTestClientException("received " + result.size() + " of " + count
                            + " messages from " + address + " within " + timeout, null);
                }
                result.add(ReceivedMessage.of(d));
                d.accept();
            }
        } catch (ClientException e) {
            throw wrap("receive from " + address + " failed", e);
        }
        return result;
    }

    /**
     * Takes and accepts every message that is available in the queue right now, using AMQP drain (no idle
     * wait). Messages delivered to another consumer and not yet settled, or waiting for a redelivery delay,
     * are not included.
     *
     * @param address the queue to empty
     * @return the messages taken; an empty list for an empty queue (the queue is auto-created if missing)
     */
    public List<ReceivedMessage> drain(String address) {
        List<ReceivedMessage> result = new ArrayList<>();
        ReceiverOptions options = new ReceiverOptions().autoAccept(false).creditWindow(0);
        try (Receiver receiver = connection.openReceiver(address, options)) {
            receiver.openFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            while (true) {
                receiver.addCredit(DRAIN_BATCH);
                receiver.drain().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                int n = 0;
                Delivery d;
                while ((d = receiver.tryReceive()) != null) {
                    result.add(ReceivedMessage.of(d));
                    d.accept();
                    n++;
                }
                if (n < DRAIN_BATCH) {
                    break;
                }
            }
        } catch (ClientException | InterruptedException | ExecutionException | TimeoutException e) {
            throw wrap("drain of " + address + " failed", e);
        }
        return result;
    }

    /** Closes the connection. */
    @Override
    public void close() {
        try {
            connection.close();
        } finally {
            client.close();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // id conversion

    /**
     * Converts a Java value to the AMQP message-id type protonj2 encodes: Long/Integer/Short/Byte → ulong
     * ({@link UnsignedLong}, the long's bits), {@code byte[]} → {@link Binary}; String, UUID, UnsignedLong and
     * Binary as they are; {@code null} stays null.
     *
     * @param id the Java value
     * @return the value protonj2 sends as the message-id
     * @throws IllegalArgumentException for any other type
     */
    public static Object toAmqpMessageId(Object id) {
        if (id == null || id instanceof String || id instanceof UUID || id instanceof UnsignedLong
                || id instanceof Binary) {
            return id;
        }
        if (id instanceof Long || id instanceof Integer || id instanceof Short || id instanceof Byte) {
            return UnsignedLong.valueOf(((Number) id).longValue());
        }
        if (id instanceof byte[] bytes) {
            return new Binary(bytes.clone());
        }
        throw new IllegalArgumentException("not an AMQP message-id type: " + id.getClass().getName());
    }

    private static AmqpTestClientException wrap(String what, Exception e) {
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
        if (e instanceof AmqpTestClientException ae) {
            return ae;
        }
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return new AmqpTestClientException(what + ": " + cause, cause);
    }

    // ------------------------------------------------------------------------------------------------
    // value types

    /** What to send: id, body, application properties, annotations, correlation-id, durable flag (default true). */
    public static final class MessageSpec {
        private final Object messageId;
        private final Object body;
        private final Map<String, Object> properties = new LinkedHashMap<>();
        private final Map<String, Object> annotations = new LinkedHashMap<>();
        private Object correlationId;
        private String groupId;
        private boolean durable = true;

        private MessageSpec(Object messageId, Object body) {
            this.messageId = toAmqpMessageId(messageId);
            this.body = body;
        }

        /**
         * Adds an application property.
         *
         * @param name the property name
         * @param value a String, number, boolean, UUID, … (any AMQP simple type)
         * @return this spec
         */
        public MessageSpec property(String name, Object value) {
            properties.put(Objects.requireNonNull(name, "name"), value);
            return this;
        }

        /**
         * Adds a message annotation.
         *
         * @param name the annotation key (sent as a symbol)
         * @param value any AMQP simple type
         * @return this spec
         */
        public MessageSpec annotation(String name, Object value) {
            annotations.put(Objects.requireNonNull(name, "name"), value);
            return this;
        }

        /**
         * Sets the correlation-id.
         *
         * @param correlationId a String, UUID, UnsignedLong or Binary
         * @return this spec
         */
        public MessageSpec correlationId(Object correlationId) {
            this.correlationId = correlationId;
            return this;
        }

        /**
         * Sets the properties' group-id (Artemis message groups; the runtime's {@code KeySource.groupId()}).
         *
         * @param groupId the group, or null for none
         * @return this spec
         */
        public MessageSpec groupId(String groupId) {
            this.groupId = groupId;
            return this;
        }

        /**
         * Sets the header durable flag.
         *
         * @param durable the flag (default true)
         * @return this spec
         */
        public MessageSpec durable(boolean durable) {
            this.durable = durable;
            return this;
        }

        /** @return the message id as it will be sent (see {@link #toAmqpMessageId(Object)}), or null */
        public Object messageId() {
            return messageId;
        }

        /** @return the body, or null for none */
        public Object body() {
            return body;
        }

        /** @return the application properties, in the order they were added (read-only) */
        public Map<String, Object> properties() {
            return Collections.unmodifiableMap(properties);
        }

        /** @return the header durable flag */
        public boolean durable() {
            return durable;
        }

        /**
         * The protonj2 message: a {@code byte[]} body becomes a Data section, anything else an AmqpValue;
         * {@code null} means no body.
         *
         * @return a new protonj2 message
         * @throws ClientException if protonj2 refuses a value
         */
        public Message<?> toMessage() throws ClientException {
            Message<?> m;
            if (body == null) {
                m = Message.create();
            } else if (body instanceof byte[] bytes) {
                m = Message.create(bytes);
            } else {
                m = Message.create(body);
            }
            if (messageId != null) {
                m.messageId(messageId);
            }
            m.durable(durable);
            for (Map.Entry<String, Object> e : properties.entrySet()) {
                m.property(e.getKey(), e.getValue());
            }
            for (Map.Entry<String, Object> e : annotations.entrySet()) {
                m.annotation(e.getKey(), e.getValue());
            }
            if (correlationId != null) {
                m.correlationId(correlationId);
            }
            if (groupId != null) {
                m.groupId(groupId);
            }
            return m;
        }

        @Override
        public String toString() {
            return "MessageSpec[id=" + messageId + ", body=" + body + ", properties=" + properties
                    + ", annotations=" + annotations + (groupId == null ? "" : ", groupId=" + groupId) + ", durable=" + durable
                    + "]";
        }
    }

    /**
     * A received (and accepted) message.
     *
     * @param messageId     as decoded: String, UUID, UnsignedLong, Binary or null
     * @param body          the first body section's value ({@code byte[]} for Data)
     * @param deliveryCount the AMQP header delivery-count
     * @param durable       the header durable flag
     * @param properties    application properties
     * @param annotations   message annotations (Symbol keys as Strings), e.g. {@code x-opt-ORIG-QUEUE}
     */
    public record ReceivedMessage(Object messageId, Object body, long deliveryCount, boolean durable,
                                  Map<String, Object> properties, Map<String, Object> annotations) {

        static ReceivedMessage of(Delivery delivery) throws ClientException {
            Message<Object> m = delivery.message();
            Map<String, Object> props = new LinkedHashMap<>();
            m.forEachProperty(props::put);
            Map<String, Object> ann = new LinkedHashMap<>();
            m.forEachAnnotation(ann::put);
            return new ReceivedMessage(m.messageId(), m.body(), m.deliveryCount(), m.durable(),
                    Collections.unmodifiableMap(props), Collections.unmodifiableMap(ann));
        }

        /** @return the body as a String: a String body as is, a Data body decoded as UTF-8, null for none */
        public String bodyAsString() {
            if (body instanceof byte[] bytes) {
                return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
            }
            return body == null ? null : body.toString();
        }
    }

    /** Unchecked failure of an {@link AmqpTestClient} operation. */
    public static final class AmqpTestClientException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        AmqpTestClientException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}

package org.acemq.amqp.spring;

/**
 * Sends messages as part of handling one message: declare it as a parameter of an {@link AcemqListener} method (or,
 * in a batch listener, {@code List<AcemqSender>}, one per message) and the starter passes one bound to the message
 * being handled.
 *
 * <pre>{@code
 * @AcemqListener(address = "orders", databaseTransaction = "true")
 * void onOrder(PlaceOrder command, AcemqSender sender) {
 *     orders.insert(command);
 *     sender.send("order-events", new OrderAccepted(command.orderId()));   // JSON, with the application's mapper
 * }
 * }</pre>
 *
 * <p>It is the {@link org.acemq.amqp.api.Envelope}'s {@code send} and {@code reply} with the listener's conversion in
 * front of them, so what is said there holds here: nothing goes out while the method runs; what it sent goes out once
 * it returned (a method that throws sends nothing); each message carries a stable message-id, derived from the
 * incoming message's key and the send's position, so a method that runs again for the same message sends the same
 * ids in the same order. With {@code databaseTransaction = "true"} on the JDBC store the messages are written to the
 * store's outbox in the listener's transaction and dispatched after the commit; with every other store they are sent
 * after the method returned and before the message is confirmed. See {@code docs/sending.md}.
 *
 * <p>What {@code message} may be:
 * <ul>
 *   <li>an {@link org.acemq.amqp.api.OutgoingMessage}: sent as it is;</li>
 *   <li>a Spring {@code org.springframework.messaging.Message<?>}: its payload converted as below, its headers
 *       mapped to the AMQP fields named in {@link AcemqHeaders} (subject, content-type, correlation-id, reply-to,
 *       group-id, durable, time-to-live, priority, annotations) and to application properties (every other header
 *       without the {@code amqp_} or {@code acemq_} prefix, and without Spring's {@code id}, {@code timestamp},
 *       {@code contentType}, {@code replyChannel} and {@code errorChannel});</li>
 *   <li>anything else: the body. A {@code String}, {@code byte[]} (a {@code data} section), number, {@code Boolean},
 *       {@code Character}, {@code UUID} or {@code Instant} is sent as it is; any other value (a record, a map, a list)
 *       is converted by the listener's message converters, the same ones that convert its payloads (JSON with the
 *       application's Jackson mapper, with content-type {@code application/json}).</li>
 * </ul>
 *
 * <p><b>Threading:</b> use it on the thread that runs the listener method, while it runs; a sender kept for later
 * refuses with {@link IllegalStateException}.
 */
public interface AcemqSender {

    /**
     * Sends {@code message} to {@code address}.
     *
     * @param address the destination (a queue or address as the broker knows it); not null or empty
     * @param message the message or its body (see the class documentation); not null
     * @return the message-id the message carries
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the address is empty, or the message cannot be converted or encoded as AMQP
     * @throws IllegalStateException if called after the listener method returned
     */
    String send(String address, Object message);

    /**
     * Answers the message being handled: sends {@code message} to its reply-to address, with the correlation-id
     * request-reply callers expect (the one {@code message} sets, else the request's correlation-id, else its
     * message-id).
     *
     * @param message the answer or its body (see the class documentation); not null
     * @return the message-id the answer carries
     * @throws NullPointerException if {@code message} is null
     * @throws IllegalArgumentException if the message cannot be converted or encoded as AMQP
     * @throws IllegalStateException if the message being handled has no reply-to address, or if called after the
     *     listener method returned
     */
    String reply(Object message);
}

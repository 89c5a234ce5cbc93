package org.acemq.amqp.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method as the handler of one AMQP address: the starter subscribes it on the application's
 * {@code AmqpConsumer}, so that each message is claimed in the idempotency store, handed to this method only if no
 * one has finished it yet, confirmed when the method returns and settled with the outcome its fate calls for.
 *
 * <pre>{@code
 * @Component
 * class Orders {
 *     @AcemqListener(address = "${orders.queue}", concurrency = "8")
 *     void onOrder(Order order, Envelope envelope) {
 *         ...
 *     }
 * }
 * }</pre>
 *
 * <h2>Parameters</h2>
 * The method is invoked through Spring Messaging's handler methods, so its parameters are those of
 * {@code @JmsListener} or {@code @RabbitListener} methods, in any order:
 * <ul>
 *   <li>the payload: one parameter with {@code @Payload}, or without annotation, converted from the body by Spring
 *       {@code MessageConverter}s (JSON with the application's Jackson mapper, {@code String}, {@code byte[]}, AMQP
 *       maps and lists; see {@link AcemqMessageConverterCustomizer}); validated when annotated {@code @Valid} or
 *       {@code @Validated}, with the application's {@code Validator};</li>
 *   <li>{@code @Header("name")}: an application property, or an AMQP field under its {@link AcemqHeaders} name
 *       ({@code amqp_messageId}, ...), converted to the parameter's type; {@code @Headers Map<String, Object>} (or
 *       {@code MessageHeaders}): all of them;</li>
 *   <li>the {@link org.acemq.amqp.api.Envelope}; Spring's {@code Message<?>} (or {@code Message<Order>});</li>
 *   <li>an {@link AcemqSender}, to send messages as part of handling this one.</li>
 * </ul>
 * A parameter that cannot be resolved fails the start (two body parameters, say). A message that does not fit the
 * method can never succeed: a payload that fails validation is rejected with condition
 * {@code acemq:validation-failed}; a body or header that cannot be converted, a missing required header or a missing
 * body with condition {@code amqp:decode-error}.
 *
 * <h2>Return value</h2>
 * A value the method returns (other than null, or an empty {@code Optional}) is sent as a message: to the address of
 * Spring Messaging's {@code @SendTo} on the method (or else on its class), or, without one (or with an empty
 * {@code @SendTo}), to the incoming message's reply-to address as a reply, its correlation-id set as request-reply
 * callers expect. It is converted as {@link AcemqSender} converts a message (an {@code OutgoingMessage} as it is, a
 * Spring {@code Message<?>} with its headers mapped to AMQP fields, a body by the listener's message converters). A
 * value with nowhere to go (no {@code @SendTo}, and the message has no reply-to) fails the message permanently: it
 * is rejected with condition {@code acemq:no-reply-address}. {@code @SendTo} takes one address, placeholders and
 * {@code #{...}} expressions resolved at start-up. It is sent as anything the method sends is: once the method
 * returned, with a stable message-id, through the outbox with a database transaction.
 *
 * <h2>Batches</h2>
 * With {@link #batch()} {@code "true"} the method takes messages a batch at a time (up to {@link #batchSize()}, or
 * what arrived within {@link #batchTime()}), and every parameter is a {@code List} with one element per message, in
 * the same order: {@code List<Order>} (each body converted, and validated with {@code @Valid}, as a single payload
 * is), {@code List<Message<Order>>}, {@code List<Envelope>}, {@code List<AcemqSender>}, or an annotated
 * {@code @Header("name") List<String>}. A message whose elements cannot be resolved is rejected as it would be in a
 * single-message listener, and the method is called with the others; throwing
 * {@link org.acemq.amqp.api.BatchItemsFailedException} (indexes into the lists the method received) fails only the
 * items it names. A batch listener returns {@code void}.
 *
 * <h2>Ordered listeners</h2>
 * {@link #orderBy()} or {@link #orderByProperty()} orders processing by a key: messages with the same key run one at
 * a time, in arrival order; different keys run in parallel up to {@link #concurrency()}.
 *
 * <h2>Outcomes</h2>
 * Exactly as for any {@link org.acemq.amqp.api.MessageHandler}: returning confirms and accepts; throwing
 * {@link org.acemq.amqp.api.PermanentMessageException} or one of {@link #permanentFailure()} rejects at once; any
 * other exception releases the claim and returns the message to the broker, until {@link #maxAttempts()}. The
 * exception the method throws reaches the runtime unchanged.
 *
 * <h2>Settings</h2>
 * Every attribute except {@link #permanentFailure()} (an array of exception classes) is a string and may hold a
 * {@code ${...}} placeholder or a SpEL {@code #{...}} expression; an empty attribute (an empty array for
 * {@code permanentFailure}) means "not set". Each setting can also be given, or overridden, in properties under
 * {@code acemq.listeners.<name>.*} ({@code <name>} is {@link #name()}, or the address when no name is given):
 * properties win over attributes, attributes over the runtime's defaults ({@code Subscription.DEFAULT_*}).
 *
 * <h2>Database transactions</h2>
 * With {@code databaseTransaction = "true"} the method runs inside a Spring transaction of the application's
 * {@code PlatformTransactionManager} (or {@link #transactionManager()}), and the idempotency store's confirm is
 * the last statement of that same transaction: database work the method does through that transaction manager
 * (JdbcTemplate, JdbcClient, JPA, ...) and the confirm commit together or not at all, so those effects happen
 * exactly once. Needs {@code acemq.store.type=jdbc} and a transaction manager whose DataSource reaches the store's
 * database. This is a database transaction; it has nothing to do with {@code acknowledgementMode = "TRANSACTIONAL"},
 * which settles deliveries in AMQP transactions on the broker. The attribute was called {@code transactional} before;
 * that name still works, deprecated, and setting both fails the start. See {@code docs/spring-boot.md}.
 *
 * <h2>Rejections</h2>
 * A message about to be rejected (a permanent failure, a poison message, a body that cannot be converted, ...) is
 * first offered to the application's {@link org.acemq.amqp.consumer.RejectionHandler} bean, when it has one (the only
 * one, or the primary one), or to the bean named by {@link #rejectionHandler()}; it can publish the message elsewhere
 * and have it accepted. Without such a bean rejections proceed as decided.
 *
 * <h2>Lifecycle</h2>
 * Each listener has an {@link #id()} (its name by default), by which the {@link AcemqListenerRegistry} bean stops,
 * starts, pauses and resumes it while the application runs; {@link #autoStartup()} false leaves it stopped until
 * then. {@link #id()} has no property (it names the listener in the registry, the properties use the name).
 *
 * <p>The method's bean is called on the consumer's handler threads, concurrently up to {@link #concurrency()}.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface AcemqListener {

    /**
     * @return the queue or address to consume; required unless {@code acemq.listeners.<name>.address} gives it
     */
    String address() default "";

    /**
     * @return the connection to consume on: a name of {@code acemq.connections.<name>.*}, or {@code default} (the
     *     default), the one {@code acemq.connection.*} configures; an unknown name fails the start
     */
    String connection() default "";

    /**
     * @return the subscription's name: the key of its properties, its metric tag, health entry and thread names
     *     (default: the address); unique per application
     */
    String name() default "";

    /**
     * @return the listener's id in the {@link AcemqListenerRegistry} and in its events (default: {@link #name()}, or
     *     the address when no name is given); unique among the application's listeners
     */
    String id() default "";

    /**
     * @return {@code false} to leave the listener stopped when the container starts, until
     *     {@link AcemqListenerHandle#start()} (default {@code true}); needs {@code AT_LEAST_ONCE} acknowledgement
     */
    String autoStartup() default "";

    /**
     * @return publish an {@link AcemqListenerIdleEvent} when the listener has handled no message for this long (and
     *     again every such interval while it stays idle), e.g. {@code 30s} (default:
     *     {@code acemq.consumer.idle-event-interval}; none if that is not set either)
     */
    String idleEventInterval() default "";

    /** @return handler threads (runtime default 1) */
    String concurrency() default "";

    /** @return deliveries that may wait beyond those being handled (runtime default 100) */
    String prefetch() default "";

    /** @return {@code AT_LEAST_ONCE} (default), {@code TRANSACTIONAL} or {@code AT_MOST_ONCE} */
    String acknowledgementMode() default "";

    /** @return attempts before a message is rejected as poison (runtime default 5) */
    String maxAttempts() default "";

    /** @return exception types (and their subtypes) that reject a message at once, besides PermanentMessageException */
    Class<? extends Throwable>[] permanentFailure() default {};

    /**
     * @return {@code MODIFIED} or {@code RELEASED}; unset: modified where the broker implements it, released where not
     *     (RabbitMQ 3)
     */
    String transientFailureOutcome() default "";

    /** @return retry back-off: delay after the first failed attempt, e.g. {@code 100ms} (default 100ms; 0: none) */
    String retryBackoffFirst() default "";

    /** @return retry back-off: the longest delay, e.g. {@code 10s} (default 10s) */
    String retryBackoffMax() default "";

    /** @return retry back-off: growth per attempt, at least 1 (default 2.0) */
    String retryBackoffMultiplier() default "";

    /** @return retry back-off: largest fraction taken off a delay at random, 0 to 1 (default 0.5) */
    String retryBackoffJitter() default "";

    /** @return {@code QUEUE} (default), {@code TOPIC} or {@code NONE}: the kind of node the receiver asks for */
    String sourceCapability() default "";

    /** @return how long an IN_PROGRESS copy is held before it is released (default 1s) */
    String inProgressDelay() default "";

    /** @return {@code REJECT} (default), {@code APPLICATION_PROPERTY} (with {@link #missingIdProperty()}) or {@code BODY_HASH} */
    String missingIdPolicy() default "";

    /** @return the application property that keys messages without a message-id, for {@code APPLICATION_PROPERTY} */
    String missingIdProperty() default "";

    /** @return a session shared with the other subscriptions of the same group (default: a session of its own) */
    String sessionGroup() default "";

    /** @return the AMQP link name (default: chosen by the client) */
    String linkName() default "";

    /** @return TRANSACTIONAL acknowledgement: settled deliveries per commit (runtime default 100) */
    String transactionBatchSize() default "";

    /** @return TRANSACTIONAL acknowledgement: longest wait before a commit (runtime default 50ms) */
    String transactionBatchTime() default "";

    /** @return whether the claim's lease is renewed while the method runs (default true) */
    String renewLeases() default "";

    /**
     * @return "true" to run the method and the store's confirm in one database transaction of the application's
     *     transaction manager (default false); unrelated to {@code acknowledgementMode = "TRANSACTIONAL"} (AMQP
     *     transactions on the broker)
     */
    String databaseTransaction() default "";

    /**
     * @return the former name of {@link #databaseTransaction()}, with the same meaning
     * @deprecated use {@link #databaseTransaction()}: this name is easily taken for the AMQP transactions of
     *     {@code acknowledgementMode = "TRANSACTIONAL"}. Setting both fails the start.
     */
    @Deprecated
    String transactional() default "";

    /**
     * @return the bean name of the transaction manager for a listener with {@link #databaseTransaction()} (default:
     *     the only one)
     */
    String transactionManager() default "";

    /**
     * @return the bean name of the {@link org.acemq.amqp.consumer.RejectionHandler} consulted before this listener's
     *     messages are rejected (default: the application's only, or primary, {@code RejectionHandler} bean; none if
     *     it has none)
     */
    String rejectionHandler() default "";

    /**
     * @return the bean name of a {@link java.util.concurrent.Executor} whose threads run this listener's handlers, for
     *     example virtual threads on Java 21+ (default: threads of the consumer's own); at most {@link #concurrency()}
     *     run at once either way
     */
    String handlerExecutor() default "";

    /**
     * @return the scope of this listener's idempotency keys, used as it is: listeners (and services sharing a store)
     *     with the same scope absorb each other's copies (default: the address; the address and a token per consumer
     *     for a topic subscription; either prefixed with {@code acemq.consumer.scope-prefix})
     */
    String scope() default "";

    /**
     * A SpEL expression that computes each message's idempotency key (default: the AMQP message-id), parsed at
     * start-up and evaluated per message, before the claim, over a root object with
     * <ul>
     *   <li>{@code headers}: the application properties ({@code headers['orderId']}, or {@code headers.orderId});</li>
     *   <li>{@code payload}: the body converted as the method's payload parameter is (by the same message
     *       converters, not validated), so {@code payload.orderId} reads the same object the method receives; the
     *       decoded AMQP body when the method has no payload parameter; converted only when the expression reads
     *       it;</li>
     *   <li>{@code messageId}: the AMQP message-id; {@code envelope}: the message's
     *       {@link org.acemq.amqp.api.Envelope} (its {@code id()} is not known yet).</li>
     * </ul>
     * The expression reads properties, map entries and indexes only: no type references, bean references, method
     * calls or assignments. Its value (a String, number, UUID or bytes) is the key; a message for which it is null
     * or fails is rejected with {@code acemq:missing-message-id}. Not together with {@link #keyProperty()}.
     *
     * @return the key expression, e.g. {@code payload.orderId} or {@code headers['orderId']}
     */
    String key() default "";

    /**
     * @return the application property holding each message's idempotency key (default: the message-id), e.g.
     *     {@code orderId}; a message without it is rejected with {@code acemq:missing-message-id}. Not together with
     *     {@link #key()}
     */
    String keyProperty() default "";

    /**
     * @return {@code body} (default): a copy whose key is already known with another body (and
     *     {@link #fingerprintProperties()}) is a conflict, counted and never run; {@code off}: a known key is a
     *     duplicate whatever the copy holds
     */
    String fingerprint() default "";

    /** @return application properties hashed with the body into the fingerprint, comma-separated, in order */
    String fingerprintProperties() default "";

    /**
     * Orders processing by a key: messages with the same key run one at a time, in the order they arrived; messages
     * with different keys run in parallel, up to {@link #concurrency()}. A transient failure holds its key (the
     * message is retried in place while the key's later messages wait). A message without the key runs unordered.
     * The key is:
     * <ul>
     *   <li>{@code group-id}: the AMQP group-id (what Artemis message groups key on, so that order also holds across
     *       several consumers of one queue);</li>
     *   <li>any other value: a SpEL expression over the same root as {@link #key()} ({@code headers},
     *       {@code payload}, {@code messageId}, {@code envelope}), e.g. {@code payload.accountId}; a null value or a
     *       failure leaves the message unordered.</li>
     * </ul>
     * Not together with {@link #orderByProperty()}; not on a {@link #batch()} listener.
     *
     * @return what to order by (default: not ordered)
     */
    String orderBy() default "";

    /**
     * @return the application property to order by, e.g. {@code accountId} (see {@link #orderBy()}); not together with
     *     {@link #orderBy()}
     */
    String orderByProperty() default "";

    /**
     * @return ordered listeners: how many messages of one key hold a place in the listener's window (default 4); later
     *     ones of a busy key wait parked beyond it, so that one hot key cannot take all the credit
     */
    String keyBacklog() default "";

    /**
     * @return ordered listeners: how many messages of busy keys may wait parked beyond the window before the listener
     *     takes no more (default 100000; {@link #parkedBytes()} normally applies first)
     */
    String parkedLimit() default "";

    /**
     * @return ordered listeners: what the messages parked beyond the window may weigh before the listener takes no more,
     *     as a data size such as {@code 64MB} or a number of bytes (default 64MB); each weighs its encoded size plus
     *     1 KiB
     */
    String parkedBytes() default "";

    /**
     * @return "true" for a batch listener: the method takes {@code List} parameters, one element per message of a batch
     *     (default false)
     */
    String batch() default "";

    /**
     * @return batch listeners: the most messages per call (default 100); {@code concurrency + prefetch} must hold one
     *     batch
     */
    String batchSize() default "";

    /** @return batch listeners: how long a batch waits to fill before the method gets what arrived (default 100ms) */
    String batchTime() default "";

    /**
     * @return {@code accept} (default): a conflicting copy is settled as a copy of its key would be, counted with
     *     reason {@code conflict} and logged; {@code reject}: it is rejected with condition
     *     {@code acemq:fingerprint-conflict}
     */
    String onConflict() default "";
}

package org.acemq.amqp.consumer.micrometer;

import io.micrometer.observation.transport.ReceiverContext;
import java.util.Map;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;

/**
 * What an {@link AcemqProcessObservationConvention} reads about one handler call: the subscription, the message, the
 * broker, and (once the delivery's fate is decided) its outcome and reason. It is a Micrometer {@link ReceiverContext}
 * (kind CONSUMER): a tracing bridge (Micrometer Tracing) extracts the producer's W3C trace context through
 * {@link #getGetter()} from {@link #getCarrier()} and makes the process span its child.
 *
 * <p><b>Trace context.</b> As the W3C trace-context AMQP draft has readers do: the carrier is the message's
 * message-annotations if they hold a {@code traceparent}, else its application properties; {@code traceparent} and
 * {@code tracestate} are read from that one section. Only string values are returned. A malformed value is the
 * propagator's to ignore (the span then starts a new trace); it never fails the delivery.
 *
 * <p>Created by {@link MicrometerObserver} on the worker thread that runs the handler; read by conventions and
 * observation handlers on that thread.
 */
public final class AcemqProcessContext extends ReceiverContext<Map<String, Object>> {

    private final String subscription;
    private final Envelope envelope;
    private final String brokerProduct;
    private final String messagingSystem;
    private volatile Outcome outcome;
    private volatile SettleReason reason;

    AcemqProcessContext(String subscription, Envelope envelope, String brokerProduct) {
        super((carrier, key) -> carrier != null && carrier.get(key) instanceof String s ? s : null);
        this.subscription = subscription;
        this.envelope = envelope;
        this.brokerProduct = brokerProduct;
        this.messagingSystem = messagingSystem(brokerProduct);
        Map<String, Object> annotations = envelope.annotations();
        setCarrier(annotations.get("traceparent") != null ? annotations : envelope.applicationProperties());
        setRemoteServiceName(brokerProduct == null ? "amqp" : brokerProduct);
    }

    /**
     * @param brokerProduct the product the broker announced, or null
     * @return the OpenTelemetry {@code messaging.system} for that broker (see {@link #messagingSystem()})
     */
    static String messagingSystem(String brokerProduct) {
        return ProcessNames.messagingSystem(brokerProduct);
    }

    /** @return the subscription's name ({@code Subscription.name()}): bounded, chosen by the application */
    public String subscription() {
        return subscription;
    }

    /** @return the message being handled (read-only; the instance the handler receives) */
    public Envelope envelope() {
        return envelope;
    }

    /** @return the address consumed (the queue, or the topic/exchange address) */
    public String destination() {
        return envelope.address();
    }

    /**
     * @return the de-duplication scope of the message's store key (the part of {@link Envelope#id()} before
     *     {@code |}), or null
     */
    public String scope() {
        String id = envelope.id();
        return id == null ? null : MessageIds.scopeOf(id);
    }

    /** @return the AMQP message-id as text, or null if the message has none */
    public String messageId() {
        Object id = envelope.messageId();
        return id == null ? null : id.toString();
    }

    /** @return the AMQP correlation-id as text, or null if the message has none */
    public String correlationId() {
        Object id = envelope.correlationId();
        return id == null ? null : id.toString();
    }

    /** @return the handler attempt for this message (1 on the first run) */
    public int attempt() {
        return envelope.attempt();
    }

    /** @return the {@code product} the broker announced when the connection opened, or null */
    public String brokerProduct() {
        return brokerProduct;
    }

    /**
     * @return the OpenTelemetry {@code messaging.system} value derived from {@link #brokerProduct()}: {@code activemq}
     *     for Apache ActiveMQ (Artemis or Classic), {@code rabbitmq} for RabbitMQ, {@code servicebus} /
     *     {@code eventhubs} for Azure Service Bus / Event Hubs, and {@code amqp} for any other broker or one that
     *     announced no product
     */
    public String messagingSystem() {
        return messagingSystem;
    }

    /**
     * @return the outcome sent, enlisted or scheduled; null while the handler runs, and if the delivery was abandoned
     *     (its link or connection died)
     */
    public Outcome outcome() {
        return outcome;
    }

    /** @return why the delivery got its outcome; null while the handler runs and if it was abandoned */
    public SettleReason reason() {
        return reason;
    }

    void decided(Outcome outcome, SettleReason reason) {
        this.outcome = outcome;
        this.reason = reason;
    }
}

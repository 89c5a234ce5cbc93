package org.acemq.amqp.consumer.micrometer;

import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;
import java.util.Locale;

/**
 * The OpenTelemetry messaging semantic conventions for the span of one handler call, plus AceMQ's own attributes.
 *
 * <ul>
 *   <li>Name {@value MicrometerObserver#OBSERVATION_NAME} (the name of the timer a meter observation handler makes);
 *       contextual name, the span's name, {@code process <destination>}.</li>
 *   <li>Low cardinality (span attributes and meter tags): {@code messaging.system} (see
 *       {@link AcemqProcessContext#messagingSystem()}), {@code messaging.destination.name} (the address consumed),
 *       {@code messaging.operation.type} and {@code messaging.operation.name} ({@code process}),
 *       {@code messaging.consumer.group.name} (the subscription's name: consumers with the same subscription name on
 *       the same address share its deliveries and, by default, its de-duplication scope), {@code acemq.subscription}
 *       (the same name), {@code acemq.outcome} ({@code accepted}, {@code released}, {@code modified},
 *       {@code rejected}, {@code none} if abandoned) and {@code acemq.reason} (the lower-case
 *       {@link org.acemq.amqp.consumer.SettleReason}, {@code none} if abandoned).</li>
 *   <li>High cardinality (span attributes only): {@code messaging.message.id} (the AMQP message-id, when present),
 *       {@code messaging.message.conversation_id} (the AMQP correlation-id, when present), {@code acemq.attempt} and
 *       {@code acemq.scope} (the de-duplication scope, which for topics holds a per-instance token).</li>
 * </ul>
 *
 * <p>Extend it to add or change key values; the instance is stateless and thread-safe.
 */
public class DefaultAcemqProcessObservationConvention implements AcemqProcessObservationConvention {

    /** The shared instance. */
    public static final DefaultAcemqProcessObservationConvention INSTANCE =
            new DefaultAcemqProcessObservationConvention();

    /**
     * {@code messaging.system} for a broker the conventions have no value for (or that announced no product): the
     * protocol's name.
     */
    public static final String MESSAGING_SYSTEM_AMQP = ProcessNames.MESSAGING_SYSTEM_AMQP;

    /** The OpenTelemetry attribute names and AceMQ's own, as this convention writes them. */
    public static final class Keys {
        /** {@code messaging.system}. */
        public static final String MESSAGING_SYSTEM = "messaging.system";
        /** {@code messaging.destination.name}. */
        public static final String DESTINATION_NAME = "messaging.destination.name";
        /** {@code messaging.operation.type}. */
        public static final String OPERATION_TYPE = "messaging.operation.type";
        /** {@code messaging.operation.name}. */
        public static final String OPERATION_NAME = "messaging.operation.name";
        /** {@code messaging.consumer.group.name}. */
        public static final String CONSUMER_GROUP_NAME = "messaging.consumer.group.name";
        /** {@code messaging.message.id}. */
        public static final String MESSAGE_ID = "messaging.message.id";
        /** {@code messaging.message.conversation_id}. */
        public static final String CONVERSATION_ID = "messaging.message.conversation_id";
        /** {@code acemq.subscription}. */
        public static final String SUBSCRIPTION = "acemq.subscription";
        /** {@code acemq.outcome}. */
        public static final String OUTCOME = "acemq.outcome";
        /** {@code acemq.reason}. */
        public static final String REASON = "acemq.reason";
        /** {@code acemq.attempt}. */
        public static final String ATTEMPT = "acemq.attempt";
        /** {@code acemq.scope}. */
        public static final String SCOPE = "acemq.scope";

        private Keys() {
        }
    }

    private static final String PROCESS = "process";
    private static final String NONE = "none";

    /** Subclasses and {@link #INSTANCE}. */
    protected DefaultAcemqProcessObservationConvention() {
    }

    @Override
    public String getName() {
        return ProcessNames.OBSERVATION_NAME;
    }

    @Override
    public String getContextualName(AcemqProcessContext context) {
        return PROCESS + " " + context.destination();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(AcemqProcessContext context) {
        return KeyValues.of(
                KeyValue.of(Keys.MESSAGING_SYSTEM, context.messagingSystem()),
                KeyValue.of(Keys.DESTINATION_NAME, context.destination()),
                KeyValue.of(Keys.OPERATION_TYPE, PROCESS),
                KeyValue.of(Keys.OPERATION_NAME, PROCESS),
                KeyValue.of(Keys.CONSUMER_GROUP_NAME, context.subscription()),
                KeyValue.of(Keys.SUBSCRIPTION, context.subscription()),
                KeyValue.of(Keys.OUTCOME, lower(context.outcome())),
                KeyValue.of(Keys.REASON, lower(context.reason())));
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(AcemqProcessContext context) {
        KeyValues values = KeyValues.of(KeyValue.of(Keys.ATTEMPT, Integer.toString(context.attempt())));
        if (context.messageId() != null) {
            values = values.and(Keys.MESSAGE_ID, context.messageId());
        }
        if (context.correlationId() != null) {
            values = values.and(Keys.CONVERSATION_ID, context.correlationId());
        }
        if (context.scope() != null) {
            values = values.and(Keys.SCOPE, context.scope());
        }
        return values;
    }

    private static String lower(Enum<?> value) {
        return value == null ? NONE : value.name().toLowerCase(Locale.ROOT);
    }
}

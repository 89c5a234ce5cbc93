package org.acemq.amqp.consumer.micrometer;

import java.util.List;

/**
 * Every meter the AceMQ consumer publishes through {@link MicrometerObserver}, declared once: name, type, base unit,
 * tag keys and description. The metrics table in the README lists exactly these; a
 * test keeps the two in step.
 *
 * <p>Tag values come from small fixed sets (lower-case enum names of {@link org.acemq.amqp.consumer.Outcome},
 * {@link org.acemq.amqp.consumer.SettleReason}, {@link org.acemq.amqp.api.IdempotencyStore.ClaimResult} plus
 * {@code error} for a claim the store did not answer, {@link org.acemq.amqp.consumer.StoreOperation},
 * {@link org.acemq.amqp.consumer.SendPath}, {@link org.acemq.amqp.consumer.SendResult}, {@code success|failure}) or
 * from the subscription names the
 * application chose. No meter is ever tagged with a message id or an address taken from a message. Common tags given
 * to {@link MicrometerObserver.Builder#commonTags(Iterable)} are added to every meter.
 *
 * <p>Gauges read {@link org.acemq.amqp.consumer.AmqpConsumer#health()} and exist only after
 * {@link MicrometerObserver#bindTo(org.acemq.amqp.consumer.AmqpConsumer)}; counters and timers are fed by the
 * observer callbacks.
 */
public enum AcemqMeter {

    /** Deliveries settled with the broker; transactional subscriptions count them after the commit succeeded. */
    DELIVERIES("acemq.consumer.deliveries", Type.COUNTER, null,
            "Deliveries settled with the broker, by AMQP outcome and reason",
            TagKey.SUBSCRIPTION, TagKey.OUTCOME, TagKey.REASON),
    /** Deliveries left unsettled because their link or connection died, or their transaction rolled back. */
    ABANDONED("acemq.consumer.abandoned", Type.COUNTER, null,
            "Deliveries not settled because their link or connection was lost (the broker redelivers them)",
            TagKey.SUBSCRIPTION),
    /** Outcomes reported settled whose disposition the connection's failure kept off the wire. */
    DISPOSITIONS_DROPPED("acemq.consumer.dispositions.dropped", Type.COUNTER, null,
            "Outcomes counted as settled whose disposition was dropped because the connection failed before it was "
                    + "written (the broker redelivers them)",
            TagKey.SUBSCRIPTION),
    /** Store answers to claims. */
    CLAIMS("acemq.consumer.claims", Type.COUNTER, null,
            "Claims of a delivery's key in the idempotency store, by result", TagKey.SUBSCRIPTION, TagKey.RESULT),
    /** Poison escalations: deliveries rejected with {@code acemq:max-attempts-exceeded}. */
    POISON("acemq.consumer.poison", Type.COUNTER, null,
            "Messages rejected as poison (acemq:max-attempts-exceeded) after using up their attempts",
            TagKey.SUBSCRIPTION),
    /** Deliveries the broker sent beyond the link credit granted, released unread (RabbitMQ 3.x). */
    BEYOND_CREDIT("acemq.consumer.beyond.credit", Type.COUNTER, null,
            "Deliveries the broker sent beyond the link credit granted, released at once unread (a RabbitMQ 3 bug; "
                    + "the broker redelivers them)",
            TagKey.SUBSCRIPTION),
    /** Handler runs without a claim (store down, {@code FAIL_OPEN}). */
    STORE_BYPASSED("acemq.consumer.store.bypassed", Type.COUNTER, null,
            "Handler runs without de-duplication because the store was down and the policy is FAIL_OPEN",
            TagKey.SUBSCRIPTION),
    /** Handler wall-clock time. */
    HANDLER_DURATION("acemq.consumer.handler.duration", Type.TIMER, "seconds",
            "Time the message handler ran, by whether it returned (success) or threw (failure)",
            TagKey.SUBSCRIPTION, TagKey.RESULT),
    /** Idempotency store call time. */
    STORE_OPERATION_DURATION("acemq.store.operation.duration", Type.TIMER, "seconds",
            "Time an idempotency store call took, by operation and whether it succeeded",
            TagKey.OPERATION, TagKey.RESULT),
    /** Keys per idempotency store call. */
    STORE_OPERATION_KEYS("acemq.store.operation.keys", Type.SUMMARY, null,
            "Message keys one idempotency store call covered (1 for single calls; more for batched claims, confirms "
                    + "and releases), by operation: call time / keys is the store time per message",
            TagKey.OPERATION),
    /** Failed store calls. */
    STORE_ERRORS("acemq.store.errors", Type.COUNTER, null,
            "Idempotency store calls that threw, by operation", TagKey.OPERATION),
    /** Messages handlers sent, each time one was sent (directly, from the outbox, by the sweep, or in a transaction). */
    SEND_DURATION("acemq.consumer.send.duration", Type.TIMER, "seconds",
            "Time from sending a message a handler sent until the broker's answer, by path (direct, outbox, sweep, "
                    + "transaction) and result (accepted, refused, failed)",
            TagKey.PATH, TagKey.RESULT),
    /** Connection losses. */
    CONNECTION_INTERRUPTIONS("acemq.consumer.connection.interruptions", Type.COUNTER, null,
            "Times the AMQP connection was lost (each is followed by reconnect attempts unless disabled)"),
    /** Deliveries held. */
    INFLIGHT("acemq.consumer.inflight", Type.GAUGE, null,
            "Deliveries received and not yet settled (waiting, running or being settled)", TagKey.SUBSCRIPTION),
    /** Outstanding link credit. */
    CREDIT("acemq.consumer.credit", Type.GAUGE, null,
            "Link credit granted to the broker and not yet used", TagKey.SUBSCRIPTION),
    /** Link state. */
    ATTACHED("acemq.consumer.attached", Type.GAUGE, null,
            "1 while the subscription's link is attached, 0 while it is detached or the connection is down",
            TagKey.SUBSCRIPTION),
    /** Age of the oldest unsettled delivery. */
    INFLIGHT_OLDEST_AGE("acemq.consumer.inflight.oldest.age", Type.GAUGE, "seconds",
            "How long the oldest unsettled delivery has been held, 0 if none", TagKey.SUBSCRIPTION),
    /** Age of the oldest live claim. */
    CLAIM_OLDEST_AGE("acemq.consumer.claim.oldest.age", Type.GAUGE, "seconds",
            "How long the oldest live store claim has been held (the longest-running handler), 0 if none",
            TagKey.SUBSCRIPTION),
    /** Paused state. */
    PAUSED("acemq.consumer.paused", Type.GAUGE, null,
            "1 while consumption is paused (no credit) because the store is unreachable, else 0"),
    /** Connection state. */
    CONNECTED("acemq.consumer.connected", Type.GAUGE, null,
            "1 while the AMQP connection is up, 0 while reconnecting or after it failed for good"),
    /** Store state. */
    STORE_REACHABLE("acemq.store.reachable", Type.GAUGE, null,
            "1 while the idempotency store answers, 0 after a failed call until it answers again"),
    /** Messages waiting in the store's transactional outbox, as the sweep last read it. */
    OUTBOX_PENDING("acemq.outbox.pending", Type.GAUGE, null,
            "Messages handlers sent that wait in the store's outbox, not dispatched yet, as the outbox sweep last read "
                    + "it (0 when the store keeps no outbox)"),
    /** Pending outbox messages whose last dispatch failed. */
    OUTBOX_FAILING("acemq.outbox.failing", Type.GAUGE, null,
            "Messages waiting in the outbox whose last dispatch failed (the broker refused them or did not take "
                    + "them), as the outbox sweep last read it"),
    /** Age of the oldest message waiting in the outbox. */
    OUTBOX_OLDEST_AGE("acemq.outbox.oldest.age", Type.GAUGE, "seconds",
            "How long the oldest message waiting in the outbox has waited since its commit, 0 if none");

    /** The kind of meter. */
    public enum Type {
        /** A monotonically increasing count. */
        COUNTER,
        /** Durations: count, total and maximum (histograms as the registry is configured). */
        TIMER,
        /** A distribution of amounts (a Micrometer {@code DistributionSummary}): count, total and maximum. */
        SUMMARY,
        /** A value sampled when the registry reads it. */
        GAUGE;

        /** @return the lower-case name used in the documentation table */
        public String docName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** Tag keys used by the meters, with the values each may take. */
    public static final class TagKey {
        /** The subscription's name ({@code Subscription.name()}, the address by default): chosen by the application. */
        public static final String SUBSCRIPTION = "subscription";
        /** {@code accepted}, {@code released}, {@code modified}, {@code rejected}. */
        public static final String OUTCOME = "outcome";
        /**
         * {@code processed}, {@code duplicate}, {@code in_progress}, {@code failed}, {@code permanent},
         * {@code poison}, {@code store_unavailable}, {@code missing_id}, {@code undecodable}, {@code shutdown},
         * {@code beyond_credit}.
         */
        public static final String REASON = "reason";
        /**
         * Claims: {@code claimed}, {@code already_confirmed}, {@code in_progress}, {@code error}; durations:
         * {@code success}, {@code failure}; sends: {@code accepted}, {@code refused}, {@code failed}.
         */
        public static final String RESULT = "result";
        /** {@code claim}, {@code confirm}, {@code release}, {@code renew}, {@code probe}. */
        public static final String OPERATION = "operation";
        /** How a message a handler sent went out: {@code direct}, {@code outbox}, {@code sweep}. */
        public static final String PATH = "path";

        private TagKey() {
        }
    }

    private final String meterName;
    private final Type type;
    private final String baseUnit;
    private final String description;
    private final List<String> tagKeys;

    AcemqMeter(String meterName, Type type, String baseUnit, String description, String... tagKeys) {
        this.meterName = meterName;
        this.type = type;
        this.baseUnit = baseUnit;
        this.description = description;
        this.tagKeys = List.of(tagKeys);
    }

    /** @return the meter name, for example {@code acemq.consumer.deliveries} */
    public String meterName() {
        return meterName;
    }

    /** @return the kind of meter */
    public Type type() {
        return type;
    }

    /** @return the base unit ({@code seconds} for timers and ages), or null for plain counts */
    public String baseUnit() {
        return baseUnit;
    }

    /** @return a one-line description, also registered with the meter */
    public String description() {
        return description;
    }

    /** @return the tag keys, in a fixed order (common tags not included) */
    public List<String> tagKeys() {
        return tagKeys;
    }
}

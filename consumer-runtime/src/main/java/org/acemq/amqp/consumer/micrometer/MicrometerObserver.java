package org.acemq.amqp.consumer.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.ToDoubleFunction;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * Publishes what a consumer does as Micrometer meters (the {@link AcemqMeter} set) and, if given an
 * {@link ObservationRegistry}, runs every handler call inside a Micrometer Observation. micrometer-core (which brings
 * micrometer-observation) is an optional dependency of the runtime; it must be on the class path only if this class
 * is used.
 *
 * <pre>{@code
 * MicrometerObserver metrics = MicrometerObserver.of(meterRegistry);
 * AmqpConsumer consumer = AmqpConsumer.builder()
 *         ...
 *         .observer(metrics)
 *         .start();
 * metrics.bindTo(consumer); // the gauges: in-flight, credit, link/connection/store state, ages, the outbox
 * }</pre>
 *
 * <p>One instance serves one consumer. To publish several consumers into one registry, give each its own instance
 * with a distinguishing common tag: {@code MicrometerObserver.builder(registry).commonTags(Tags.of("consumer",
 * "billing")).build()}.
 *
 * <p><b>Observation.</b> With {@link Builder#observationRegistry}, each handler call runs inside an Observation named
 * {@value #OBSERVATION_NAME}, current on the worker thread while the handler runs (so the handler can start child
 * observations) and stopped on that thread once the delivery's outcome is decided. Its context is an
 * {@link AcemqProcessContext}, a {@code ReceiverContext} (kind CONSUMER) whose carrier holds the producer's W3C trace
 * context ({@code traceparent}/{@code tracestate} from the message-annotations, else the application properties), so
 * a tracing bridge (Micrometer Tracing) makes the process span a child of the producer's. Names and key values come
 * from an {@link AcemqProcessObservationConvention}: by default {@link DefaultAcemqProcessObservationConvention}, the
 * OpenTelemetry messaging conventions (span {@code process <address>}, {@code messaging.*} attributes) plus AceMQ's
 * outcome, reason, attempt and scope; replace it with {@link Builder#processObservationConvention}. The handler's
 * exception is the Observation's error.
 *
 * <p><b>Cost.</b> Store meters, the send timers and the per-subscription counters and timers are registered the first
 * time they can be (at construction, at {@link #bindTo} or on a subscription's first event) and cached; an event costs
 * one lookup of the subscription name in a small concurrent map and an array index, never a registry lookup or a
 * string concatenation. Delivery counters are registered on first use, so only (outcome, reason) pairs that occur
 * appear. The outbox gauges read the consumer's last outbox status ({@link ConsumerHealth#outbox()}), which the outbox
 * sweep refreshes: a scrape never queries the store.
 *
 * <p><b>Threading.</b> Thread-safe; callbacks never block and never throw.
 */
public final class MicrometerObserver implements ConsumerObserver {

    /** The name of the Observation around each handler call. */
    public static final String OBSERVATION_NAME = ProcessNames.OBSERVATION_NAME;

    private static final String[] OUTCOMES = lowerNames(Outcome.values());
    private static final String[] REASONS = lowerNames(SettleReason.values());
    /** The {@code result} tag values of claims: the store's answers, then {@link #CLAIM_ERROR}. */
    private static final String[] CLAIM_RESULTS = withError(lowerNames(ClaimResult.values()));
    /** The {@code result} tag value of a claim the store did not answer (it failed, or refused the key). */
    private static final String CLAIM_ERROR = "error";
    private static final String[] OPERATIONS = lowerNames(StoreOperation.values());
    private static final String[] SEND_PATHS = lowerNames(SendPath.values());
    private static final String[] SEND_RESULTS = lowerNames(SendResult.values());
    private static final String SUCCESS = "success";
    private static final String FAILURE = "failure";

    private final MeterRegistry registry;
    private final Tags commonTags;
    private final ConcurrentHashMap<String, SubscriptionMeters> subscriptions = new ConcurrentHashMap<>();
    private final Timer[] storeSuccess = new Timer[OPERATIONS.length];
    private final Timer[] storeFailure = new Timer[OPERATIONS.length];
    private final Counter[] storeErrors = new Counter[OPERATIONS.length];
    private final DistributionSummary[] storeKeys = new DistributionSummary[OPERATIONS.length];
    /** By {@link SendPath} and {@link SendResult} ordinals, all registered at construction. */
    private final Timer[][] sends = new Timer[SEND_PATHS.length][SEND_RESULTS.length];
    private final Counter interruptions;
    private final AtomicBoolean bound = new AtomicBoolean();
    private final ObservationRegistry observations;
    private final AcemqProcessObservationConvention convention;

    private MicrometerObserver(MeterRegistry registry, Tags commonTags, ObservationRegistry observations,
                               AcemqProcessObservationConvention convention) {
        this.registry = registry;
        this.commonTags = commonTags;
        this.observations = observations == null || observations.isNoop() ? null : observations;
        this.convention = convention;
        for (int i = 0; i < OPERATIONS.length; i++) {
            storeSuccess[i] = timer(AcemqMeter.STORE_OPERATION_DURATION, OPERATIONS[i], SUCCESS);
            storeFailure[i] = timer(AcemqMeter.STORE_OPERATION_DURATION, OPERATIONS[i], FAILURE);
            storeErrors[i] = counter(AcemqMeter.STORE_ERRORS, OPERATIONS[i]);
            storeKeys[i] = summary(AcemqMeter.STORE_OPERATION_KEYS, OPERATIONS[i]);
        }
        for (int p = 0; p < SEND_PATHS.length; p++) {
            for (int r = 0; r < SEND_RESULTS.length; r++) {
                sends[p][r] = timer(AcemqMeter.SEND_DURATION, SEND_PATHS[p], SEND_RESULTS[r]);
            }
        }
        this.interruptions = counter(AcemqMeter.CONNECTION_INTERRUPTIONS);
    }

    /**
     * Metrics only, no common tags, no Observation.
     *
     * @param registry where to register the meters
     * @return an observer to pass to {@link AmqpConsumer.Builder#observer}
     */
    public static MicrometerObserver of(MeterRegistry registry) {
        return builder(registry).build();
    }

    /**
     * @param registry where to register the meters
     * @return a builder
     */
    public static Builder builder(MeterRegistry registry) {
        return new Builder(Objects.requireNonNull(registry, "registry must not be null"));
    }

    /** Builds a {@link MicrometerObserver}. */
    public static final class Builder {
        private final MeterRegistry registry;
        private Tags commonTags = Tags.empty();
        private ObservationRegistry observations;
        private AcemqProcessObservationConvention convention;

        private Builder(MeterRegistry registry) {
            this.registry = registry;
        }

        /**
         * @param tags tags added to every meter (for example {@code consumer=billing}); keep their values bounded
         *     (default none)
         * @return this builder
         */
        public Builder commonTags(Iterable<io.micrometer.core.instrument.Tag> tags) {
            this.commonTags = Tags.of(Objects.requireNonNull(tags, "commonTags must not be null"));
            return this;
        }

        /**
         * @param registry observe every handler call with this registry (default: no Observation); see the class
         *     documentation
         * @return this builder
         */
        public Builder observationRegistry(ObservationRegistry registry) {
            this.observations = Objects.requireNonNull(registry, "observationRegistry must not be null");
            return this;
        }

        /**
         * @param convention names and describes the Observation around each handler call instead of
         *     {@link DefaultAcemqProcessObservationConvention} (default: that one, unless the
         *     {@code ObservationRegistry} has a global convention for {@link AcemqProcessContext}); used only with
         *     {@link #observationRegistry}
         * @return this builder
         */
        public Builder processObservationConvention(AcemqProcessObservationConvention convention) {
            this.convention = Objects.requireNonNull(convention, "processObservationConvention must not be null");
            return this;
        }

        /** @return the observer, with its store meters registered */
        public MicrometerObserver build() {
            return new MicrometerObserver(registry, commonTags, observations, convention);
        }
    }

    /**
     * Registers the gauges of {@link AcemqMeter} (type {@link AcemqMeter.Type#GAUGE}) over {@code consumer}'s
     * {@link AmqpConsumer#health()}, and the per-subscription counters and timers with zero counts. Call once, after
     * {@link AmqpConsumer.Builder#start()}, with the consumer this observer was given to. The gauges hold the consumer
     * weakly: once it is closed they report its final state (not connected, nothing in flight), and once it is
     * garbage collected they report NaN; remove them from the registry if the consumer is replaced.
     *
     * @param consumer the running consumer this observer observes
     * @return this
     * @throws IllegalStateException if this observer is already bound
     */
    public MicrometerObserver bindTo(AmqpConsumer consumer) {
        Objects.requireNonNull(consumer, "consumer must not be null");
        if (!bound.compareAndSet(false, true)) {
            throw new IllegalStateException("this MicrometerObserver is already bound to a consumer");
        }
        gauge(AcemqMeter.PAUSED, consumer, c -> c.health().paused() ? 1 : 0, Tags.empty());
        gauge(AcemqMeter.CONNECTED, consumer, c -> c.health().connected() ? 1 : 0, Tags.empty());
        gauge(AcemqMeter.STORE_REACHABLE, consumer, c -> c.health().storeReachable() ? 1 : 0, Tags.empty());
        gauge(AcemqMeter.OUTBOX_PENDING, consumer, c -> outbox(c, o -> o.pending()), Tags.empty());
        gauge(AcemqMeter.OUTBOX_FAILING, consumer, c -> outbox(c, o -> o.failing()), Tags.empty());
        timeGauge(AcemqMeter.OUTBOX_OLDEST_AGE, consumer, c -> outbox(c, o -> seconds(o.oldestPending())),
                Tags.empty());
        for (SubscriptionHealth s : consumer.health().subscriptions()) {
            String name = s.name();
            meters(name);
            Tags tags = Tags.of(AcemqMeter.TagKey.SUBSCRIPTION, name);
            gauge(AcemqMeter.INFLIGHT, consumer, c -> sub(c, name, h -> h.inFlight()), tags);
            gauge(AcemqMeter.CREDIT, consumer, c -> sub(c, name, h -> h.credit()), tags);
            gauge(AcemqMeter.ATTACHED, consumer, c -> sub(c, name, h -> h.attached() ? 1 : 0), tags);
            timeGauge(AcemqMeter.INFLIGHT_OLDEST_AGE, consumer, c -> sub(c, name, h -> seconds(h.oldestInFlight())),
                    tags);
            timeGauge(AcemqMeter.CLAIM_OLDEST_AGE, consumer, c -> sub(c, name, h -> seconds(h.oldestClaim())), tags);
        }
        return this;
    }

    // ------------------------------------------------------------------ ConsumerObserver

    @Override
    public void claim(String subscription, ClaimResult result) {
        meters(subscription).claims[result.ordinal()].increment();
    }

    @Override
    public void claimFailed(String subscription) {
        meters(subscription).claims[CLAIM_RESULTS.length - 1].increment();
    }

    @Override
    public void settled(String subscription, Outcome outcome, SettleReason reason) {
        SubscriptionMeters m = meters(subscription);
        m.delivery(outcome, reason).increment();
        if (reason == SettleReason.POISON && outcome == Outcome.REJECTED) {
            // one the application's RejectionHandler took over is accepted: deliveries{accepted,poison}, not here
            m.poison.increment();
        } else if (reason == SettleReason.BEYOND_CREDIT) {
            m.beyondCredit.increment();
        }
    }

    @Override
    public void abandoned(String subscription) {
        meters(subscription).abandoned.increment();
    }

    @Override
    public void dispositionDropped(String subscription) {
        meters(subscription).dropped.increment();
    }

    @Override
    public void handled(String subscription, long nanos, boolean success) {
        SubscriptionMeters m = meters(subscription);
        (success ? m.handlerSuccess : m.handlerFailure).record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public HandlerScope handlerStarting(String subscription, Envelope envelope, String brokerProduct) {
        return observations == null ? null
                : ProcessObservation.start(observations, convention, subscription, envelope, brokerProduct);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success) {
        storeCall(operation, nanos, success, 1);
    }

    @Override
    public void storeCall(StoreOperation operation, long nanos, boolean success, int keys) {
        int i = operation.ordinal();
        storeKeys[i].record(keys);
        if (success) {
            storeSuccess[i].record(nanos, TimeUnit.NANOSECONDS);
        } else {
            storeFailure[i].record(nanos, TimeUnit.NANOSECONDS);
            storeErrors[i].increment();
        }
    }

    @Override
    public void sent(SendPath path, SendResult result, long nanos) {
        sends[path.ordinal()][result.ordinal()].record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void storeBypassed(String subscription) {
        meters(subscription).bypassed.increment();
    }

    @Override
    public void connectionInterrupted(boolean interrupted) {
        if (interrupted) {
            interruptions.increment();
        }
    }

    // ------------------------------------------------------------------ registration

    private SubscriptionMeters meters(String subscription) {
        SubscriptionMeters m = subscriptions.get(subscription);
        return m != null ? m : subscriptions.computeIfAbsent(subscription, SubscriptionMeters::new);
    }

    /** The meters of one subscription; delivery counters are created on first use. */
    private final class SubscriptionMeters {
        final String name;
        final Counter[] claims = new Counter[CLAIM_RESULTS.length];
        final AtomicReferenceArray<Counter> deliveries = new AtomicReferenceArray<>(OUTCOMES.length * REASONS.length);
        final Counter abandoned;
        final Counter dropped;
        final Counter poison;
        final Counter beyondCredit;
        final Counter bypassed;
        final Timer handlerSuccess;
        final Timer handlerFailure;

        SubscriptionMeters(String name) {
            this.name = name;
            for (int i = 0; i < claims.length; i++) {
                claims[i] = counter(AcemqMeter.CLAIMS, name, CLAIM_RESULTS[i]);
            }
            abandoned = counter(AcemqMeter.ABANDONED, name);
            dropped = counter(AcemqMeter.DISPOSITIONS_DROPPED, name);
            poison = counter(AcemqMeter.POISON, name);
            beyondCredit = counter(AcemqMeter.BEYOND_CREDIT, name);
            bypassed = counter(AcemqMeter.STORE_BYPASSED, name);
            handlerSuccess = timer(AcemqMeter.HANDLER_DURATION, name, SUCCESS);
            handlerFailure = timer(AcemqMeter.HANDLER_DURATION, name, FAILURE);
        }

        Counter delivery(Outcome outcome, SettleReason reason) {
            int i = outcome.ordinal() * REASONS.length + reason.ordinal();
            Counter c = deliveries.get(i);
            if (c == null) {
                // Registration is idempotent in Micrometer, so a race registers once and both get the same counter.
                c = counter(AcemqMeter.DELIVERIES, name, OUTCOMES[outcome.ordinal()], REASONS[reason.ordinal()]);
                deliveries.set(i, c);
            }
            return c;
        }
    }

    private Tags tags(AcemqMeter meter, String... values) {
        if (values.length != meter.tagKeys().size()) {
            throw new IllegalArgumentException(meter + " takes tags " + meter.tagKeys());
        }
        Tags tags = commonTags;
        for (int i = 0; i < values.length; i++) {
            tags = tags.and(meter.tagKeys().get(i), values[i]);
        }
        return tags;
    }

    private Counter counter(AcemqMeter meter, String... tagValues) {
        return Counter.builder(meter.meterName()).description(meter.description()).baseUnit(meter.baseUnit())
                .tags(tags(meter, tagValues)).register(registry);
    }

    private Timer timer(AcemqMeter meter, String... tagValues) {
        return Timer.builder(meter.meterName()).description(meter.description()).tags(tags(meter, tagValues))
                .register(registry);
    }

    private DistributionSummary summary(AcemqMeter meter, String... tagValues) {
        return DistributionSummary.builder(meter.meterName()).description(meter.description())
                .baseUnit(meter.baseUnit()).tags(tags(meter, tagValues)).register(registry);
    }

    private void gauge(AcemqMeter meter, AmqpConsumer consumer, ToDoubleFunction<AmqpConsumer> value, Tags tags) {
        Gauge.builder(meter.meterName(), consumer, value).description(meter.description()).baseUnit(meter.baseUnit())
                .tags(commonTags.and(tags)).register(registry);
    }

    private void timeGauge(AcemqMeter meter, AmqpConsumer consumer, ToDoubleFunction<AmqpConsumer> seconds,
                           Tags tags) {
        TimeGauge.builder(meter.meterName(), consumer, TimeUnit.SECONDS, seconds).description(meter.description())
                .tags(commonTags.and(tags)).register(registry);
    }

    private static double sub(AmqpConsumer consumer, String name, ToDoubleFunction<SubscriptionHealth> value) {
        ConsumerHealth health = consumer.health();
        for (SubscriptionHealth s : health.subscriptions()) {
            if (s.name().equals(name)) {
                return value.applyAsDouble(s);
            }
        }
        return Double.NaN;
    }

    /** @return a value of the consumer's outbox as last read, 0 when its store keeps no outbox */
    private static double outbox(AmqpConsumer consumer, ToDoubleFunction<ConsumerHealth.OutboxHealth> value) {
        ConsumerHealth.OutboxHealth outbox = consumer.health().outbox();
        return outbox == null ? 0 : value.applyAsDouble(outbox);
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    private static String[] withError(String[] results) {
        String[] all = java.util.Arrays.copyOf(results, results.length + 1);
        all[results.length] = CLAIM_ERROR;
        return all;
    }

    private static String[] lowerNames(Enum<?>[] values) {
        String[] names = new String[values.length];
        for (int i = 0; i < values.length; i++) {
            names[i] = values[i].name().toLowerCase(Locale.ROOT);
        }
        return names;
    }
}

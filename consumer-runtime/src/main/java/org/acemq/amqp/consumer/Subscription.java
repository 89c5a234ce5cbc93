package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executor;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.PermanentMessageException;

/**
 * One address to consume, the handler for it, and how. Immutable; build with {@link #builder(String, MessageHandler)}.
 *
 * <p>Every delivery is settled by one fixed rule set, the same for every acknowledgement mode: the README's outcome
 * table ("Delivery guarantees") lists each case and its outcome. The claim is always released before a failure
 * outcome is sent, and confirmed before {@code accepted} is sent.
 */
public final class Subscription {

    /** Handler threads for one subscription: 1. */
    public static final int DEFAULT_CONCURRENCY = 1;
    /** Deliveries that may wait, already received, beyond those being handled: 100. */
    public static final int DEFAULT_PREFETCH = 100;
    /** Attempts (claims of the same message) before it is rejected as poison: 5. */
    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    /** How long an IN_PROGRESS copy is held before it is released back to the broker: 1 s. */
    public static final Duration DEFAULT_IN_PROGRESS_DELAY = Duration.ofSeconds(1);
    /** How long a transiently failed delivery is held before it goes back: {@link RetryBackoff#DEFAULT}. */
    public static final RetryBackoff DEFAULT_RETRY_BACKOFF = RetryBackoff.DEFAULT;
    /** The node the receiver asks for: {@link SourceCapability#QUEUE}. */
    public static final SourceCapability DEFAULT_SOURCE_CAPABILITY = SourceCapability.QUEUE;
    /** Transactional mode: commit after this many settled deliveries: 100. */
    public static final int DEFAULT_TRANSACTION_BATCH_SIZE = 100;
    /** Transactional mode: commit at the latest this long after the first settled delivery: 50 ms. */
    public static final Duration DEFAULT_TRANSACTION_BATCH_TIME = Duration.ofMillis(50);
    /** The rejection condition for messages that used up their attempts. */
    public static final String MAX_ATTEMPTS_CONDITION = RejectionConditions.MAX_ATTEMPTS_EXCEEDED;
    /** Deliveries of one ordering key that hold a place in the subscription's window: 4. */
    public static final int DEFAULT_KEY_BACKLOG = 4;
    /**
     * Deliveries of busy keys held beyond the window (parked) before the subscription stops taking more: 100,000. A cap
     * on the count; with the default {@link #DEFAULT_PARKED_BYTES} the byte bound is the one that applies first (small
     * messages weigh about 1 KiB each there).
     */
    public static final int DEFAULT_PARKED_LIMIT = 100_000;
    /** What parked deliveries may weigh before the subscription stops taking more: 64 MiB. */
    public static final long DEFAULT_PARKED_BYTES = 64L * 1024 * 1024;
    /**
     * What a parked delivery weighs beyond its payload, by estimate: 1 KiB for the objects around a small message (the
     * decoded message and its properties, the handler's envelope, the keys, protonj2's delivery, the runtime's own
     * record). Not measured per message.
     */
    public static final int PARKED_DELIVERY_OVERHEAD = 1024;
    /** The most messages a batch handler gets in one call: 100. */
    public static final int DEFAULT_BATCH_SIZE = 100;
    /** How long a batch waits to fill before its handler runs with what arrived: 100 ms. */
    public static final Duration DEFAULT_BATCH_TIME = Duration.ofMillis(100);

    private final String address;
    private final MessageHandler handler;
    private final BatchHandler batchHandler;
    private final String name;
    private final int concurrency;
    private final int prefetch;
    private final AcknowledgementMode acknowledgementMode;
    private final int maxAttempts;
    private final Set<Class<? extends Throwable>> permanentFailures;
    private final Outcome transientFailureOutcome;
    private final RetryBackoff retryBackoff;
    private final SourceCapability sourceCapability;
    private final Duration inProgressDelay;
    private final MissingIdPolicy missingIdPolicy;
    private final String sessionGroup;
    private final String linkName;
    private final int transactionBatchSize;
    private final Duration transactionBatchTime;
    private final boolean renewLeases;
    private final boolean autoStartup;
    private final String scope;
    private final KeySource keySource;
    private final Fingerprint fingerprint;
    private final RejectionHandler rejectionHandler;
    private final Executor handlerExecutor;
    private final KeySource orderBy;
    private final int keyBacklog;
    private final int parkedLimit;
    private final long parkedBytes;
    private final int batchSize;
    private final Duration batchTime;

    private Subscription(Builder b) {
        this.address = b.address;
        this.batchHandler = b.batchHandler;
        this.handler = b.handler != null ? b.handler : e -> b.batchHandler.handle(List.of(e));
        this.name = b.name != null ? b.name : b.address;
        this.concurrency = b.concurrency;
        this.prefetch = b.prefetch;
        this.acknowledgementMode = b.acknowledgementMode;
        this.maxAttempts = b.maxAttempts;
        this.permanentFailures = Set.copyOf(b.permanentFailures);
        this.transientFailureOutcome = b.transientFailureOutcome;
        this.retryBackoff = b.retryBackoff;
        this.sourceCapability = b.sourceCapability;
        this.inProgressDelay = b.inProgressDelay;
        this.missingIdPolicy = b.missingIdPolicy;
        this.sessionGroup = b.sessionGroup;
        this.linkName = b.linkName;
        this.transactionBatchSize = b.transactionBatchSize;
        this.transactionBatchTime = b.transactionBatchTime;
        this.renewLeases = b.renewLeases;
        this.autoStartup = b.autoStartup;
        this.scope = b.scope;
        this.keySource = b.keySource;
        this.fingerprint = b.fingerprint;
        this.rejectionHandler = b.rejectionHandler;
        this.handlerExecutor = b.handlerExecutor;
        this.orderBy = b.orderBy;
        this.keyBacklog = b.keyBacklog;
        this.parkedLimit = b.parkedLimit;
        this.parkedBytes = b.parkedBytes;
        this.batchSize = b.batchSize;
        this.batchTime = b.batchTime;
    }

    /**
     * @param address the queue or address to consume from
     * @param handler the application code run for each message
     * @return a builder with every other setting at its default
     */
    public static Builder builder(String address, MessageHandler handler) {
        return new Builder(address, Objects.requireNonNull(handler, "handler must not be null"), null);
    }

    /**
     * A subscription whose handler takes messages a batch at a time: up to {@link Builder#batchSize} per call, or
     * what arrived within {@link Builder#batchTime}.
     *
     * @param address the queue or address to consume from
     * @param handler the application code run for each batch
     * @return a builder with every other setting at its default
     */
    public static Builder batchBuilder(String address, BatchHandler handler) {
        return new Builder(address, null, Objects.requireNonNull(handler, "handler must not be null"));
    }

    /** @return the address consumed */
    public String address() {
        return address;
    }

    /** @return the handler */
    public MessageHandler handler() {
        return handler;
    }

    /**
     * @return the batch handler of a subscription made with {@link #batchBuilder}, else empty (then {@link #handler()}
     *     is the handler; for a batch subscription {@link #handler()} runs the batch handler with one message)
     */
    public Optional<BatchHandler> batchHandler() {
        return Optional.ofNullable(batchHandler);
    }

    /** @return the key deliveries are ordered by (one at a time per key, in arrival order), if the subscription orders */
    public Optional<KeySource> orderBy() {
        return Optional.ofNullable(orderBy);
    }

    /** @return how many deliveries of one ordering key hold a place in the subscription's window */
    public int keyBacklog() {
        return keyBacklog;
    }

    /** @return how many deliveries of busy ordering keys are held beyond the window before no more are taken */
    public int parkedLimit() {
        return parkedLimit;
    }

    /**
     * @return what deliveries of busy ordering keys held beyond the window may weigh before no more are taken, in bytes
     *     (each weighs its encoded size plus {@link #PARKED_DELIVERY_OVERHEAD})
     */
    public long parkedBytes() {
        return parkedBytes;
    }

    /** @return the most messages a batch handler gets in one call */
    public int batchSize() {
        return batchSize;
    }

    /** @return how long a batch waits to fill before its handler runs with what arrived */
    public Duration batchTime() {
        return batchTime;
    }

    /** @return the name used in metrics, health and thread names (defaults to the address) */
    public String name() {
        return name;
    }

    /** @return how many handlers run at once */
    public int concurrency() {
        return concurrency;
    }

    /** @return how many received deliveries may wait beyond those being handled */
    public int prefetch() {
        return prefetch;
    }

    /** @return the most deliveries this subscription holds unsettled or has credit for: concurrency + prefetch */
    public int maxInFlight() {
        return concurrency + prefetch;
    }

    /** @return the acknowledgement mode */
    public AcknowledgementMode acknowledgementMode() {
        return acknowledgementMode;
    }

    /** @return attempts before a message is rejected as poison */
    public int maxAttempts() {
        return maxAttempts;
    }

    /** @return exception types (and their subtypes) that reject a message at once */
    public Set<Class<? extends Throwable>> permanentFailures() {
        return permanentFailures;
    }

    /**
     * @return the outcome chosen for a transient failure, or empty (the default) for the broker's best:
     *     {@code modified} with delivery-failed where the broker implements it, {@code released} where it does not
     *     (RabbitMQ 3.x)
     */
    public Optional<Outcome> transientFailureOutcome() {
        return Optional.ofNullable(transientFailureOutcome);
    }

    /** @return how long a transiently failed delivery is held before it goes back */
    public RetryBackoff retryBackoff() {
        return retryBackoff;
    }

    /** @return the kind of node the receiver asks the broker for */
    public SourceCapability sourceCapability() {
        return sourceCapability;
    }

    /** @return how long an IN_PROGRESS copy is held before it is released */
    public Duration inProgressDelay() {
        return inProgressDelay;
    }

    /** @return what to do with messages without a message-id */
    public MissingIdPolicy missingIdPolicy() {
        return missingIdPolicy;
    }

    /** @return the name of the session this subscription shares with others, or null for a session of its own */
    public String sessionGroup() {
        return sessionGroup;
    }

    /** @return the AMQP link name, or null to let the client choose */
    public String linkName() {
        return linkName;
    }

    /** @return transactional mode: deliveries per commit */
    public int transactionBatchSize() {
        return transactionBatchSize;
    }

    /** @return transactional mode: longest wait before a commit */
    public Duration transactionBatchTime() {
        return transactionBatchTime;
    }

    /** @return whether the subscription attaches when the consumer starts (else at {@link SubscriptionControl#start()}) */
    public boolean autoStartup() {
        return autoStartup;
    }

    /** @return whether leases are renewed while a handler runs (when the store supports it) */
    public boolean renewLeases() {
        return renewLeases;
    }

    /**
     * @return the scope set with {@link Builder#scope}, or empty for the default (derived from the endpoint, see
     *     {@link Builder#scope})
     */
    public Optional<String> scope() {
        return Optional.ofNullable(scope);
    }

    /** @return where each message's idempotency key comes from */
    public KeySource keySource() {
        return keySource;
    }

    /** @return whether and how copies that differ are told from duplicates */
    public Fingerprint fingerprint() {
        return fingerprint;
    }

    /**
     * @return the handler consulted before a delivery is rejected; empty (the default) when rejections proceed as
     *     decided
     */
    public Optional<RejectionHandler> rejectionHandler() {
        return Optional.ofNullable(rejectionHandler);
    }

    /**
     * @return the executor whose threads run this subscription's handlers; empty (the default) when the consumer
     *     starts {@link #concurrency()} threads of its own
     */
    public Optional<Executor> handlerExecutor() {
        return Optional.ofNullable(handlerExecutor);
    }

    /**
     * @param failure what the handler threw
     * @return whether it means the message can never succeed
     */
    public boolean isPermanent(Throwable failure) {
        if (failure instanceof PermanentMessageException) {
            return true;
        }
        for (Class<? extends Throwable> type : permanentFailures) {
            if (type.isInstance(failure)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "Subscription[" + name + " <- " + address + ", " + acknowledgementMode + ", concurrency " + concurrency
                + ", prefetch " + prefetch + ", maxAttempts " + maxAttempts + "]";
    }

    /** Builds a {@link Subscription}; setters validate at once. */
    public static final class Builder {
        private final String address;
        private final MessageHandler handler;
        private final BatchHandler batchHandler;
        private String name;
        private int concurrency = DEFAULT_CONCURRENCY;
        private int prefetch = DEFAULT_PREFETCH;
        private AcknowledgementMode acknowledgementMode = AcknowledgementMode.AT_LEAST_ONCE;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private final Set<Class<? extends Throwable>> permanentFailures = new LinkedHashSet<>();
        private Outcome transientFailureOutcome;
        private RetryBackoff retryBackoff = DEFAULT_RETRY_BACKOFF;
        private SourceCapability sourceCapability = DEFAULT_SOURCE_CAPABILITY;
        private Duration inProgressDelay = DEFAULT_IN_PROGRESS_DELAY;
        private MissingIdPolicy missingIdPolicy = MissingIdPolicy.reject();
        private String sessionGroup;
        private String linkName;
        private int transactionBatchSize = DEFAULT_TRANSACTION_BATCH_SIZE;
        private Duration transactionBatchTime = DEFAULT_TRANSACTION_BATCH_TIME;
        private boolean renewLeases = true;
        private boolean autoStartup = true;
        private String scope;
        private KeySource keySource = KeySource.messageId();
        private Fingerprint fingerprint = Fingerprint.body();
        private RejectionHandler rejectionHandler;
        private Executor handlerExecutor;
        private KeySource orderBy;
        private int keyBacklog = DEFAULT_KEY_BACKLOG;
        private int parkedLimit = DEFAULT_PARKED_LIMIT;
        private long parkedBytes = DEFAULT_PARKED_BYTES;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private Duration batchTime = DEFAULT_BATCH_TIME;

        private Builder(String address, MessageHandler handler, BatchHandler batchHandler) {
            this.address = Validation.notBlank("address", address);
            this.handler = handler;
            this.batchHandler = batchHandler;
        }

        /**
         * @param name the name used in metrics tags, health and thread names (default: the address); keep it short
         *     and fixed
         * @return this builder
         */
        public Builder name(String name) {
            this.name = Validation.notBlank("name", name);
            return this;
        }

        /**
         * @param threads how many handlers run at once (default 1)
         * @return this builder
         */
        public Builder concurrency(int threads) {
            this.concurrency = Validation.atLeast("concurrency", 1, threads);
            return this;
        }

        /**
         * @param deliveries how many received deliveries may wait beyond those being handled (default 100); 0 means
         *     a delivery is asked for only when a handler thread is free
         * @return this builder
         */
        public Builder prefetch(int deliveries) {
            this.prefetch = Validation.atLeast("prefetch", 0, deliveries);
            return this;
        }

        /**
         * @param mode how deliveries are acknowledged (default {@link AcknowledgementMode#AT_LEAST_ONCE})
         * @return this builder
         */
        public Builder acknowledgementMode(AcknowledgementMode mode) {
            this.acknowledgementMode = Objects.requireNonNull(mode, "acknowledgementMode must not be null");
            return this;
        }

        /**
         * @param attempts how many claims of one message may fail before it is rejected (default 5)
         * @return this builder
         */
        public Builder maxAttempts(int attempts) {
            this.maxAttempts = Validation.atLeast("maxAttempts", 1, attempts);
            return this;
        }

        /**
         * Declares exception types that mean "this message can never succeed": a handler throwing one (or a
         * subtype) gets its message rejected at once. {@link PermanentMessageException} always counts.
         *
         * @param types the exception types
         * @return this builder
         */
        @SafeVarargs
        public final Builder permanentFailure(Class<? extends Throwable>... types) {
            for (Class<? extends Throwable> type : types) {
                permanentFailures.add(Objects.requireNonNull(type, "permanent failure type must not be null"));
            }
            return this;
        }

        /**
         * Chooses the outcome of a transient failure instead of letting the runtime choose from the broker: by default
         * {@code modified(delivery-failed)} (counted by brokers) where the broker implements it, else {@code released}
         * (RabbitMQ 3.x, where the first {@code modified} ends the session). The runtime's own attempt count stops
         * poison messages either way.
         *
         * @param outcome {@link Outcome#MODIFIED} or {@link Outcome#RELEASED}
         * @return this builder
         */
        public Builder transientFailureOutcome(Outcome outcome) {
            if (outcome != Outcome.MODIFIED && outcome != Outcome.RELEASED) {
                throw new IllegalArgumentException("transientFailureOutcome must be MODIFIED or RELEASED, but was "
                        + outcome);
            }
            this.transientFailureOutcome = outcome;
            return this;
        }

        /**
         * @param backoff how long a transiently failed delivery is held before it goes back, by attempt (default
         *     {@link RetryBackoff#DEFAULT}: 100 ms doubling to 10 s, jitter 0.5); {@link RetryBackoff#none()} to
         *     leave delays to the broker
         * @return this builder
         */
        public Builder retryBackoff(RetryBackoff backoff) {
            this.retryBackoff = Objects.requireNonNull(backoff, "retryBackoff must not be null");
            return this;
        }

        /**
         * @param capability the kind of node the receiver asks for (default {@link SourceCapability#QUEUE})
         * @return this builder
         */
        public Builder sourceCapability(SourceCapability capability) {
            this.sourceCapability = Objects.requireNonNull(capability, "sourceCapability must not be null");
            return this;
        }

        /**
         * @param delay how long an IN_PROGRESS copy is held before it is released, so that it is not redelivered in
         *     a tight loop while its owner works (default 1 s)
         * @return this builder
         */
        public Builder inProgressDelay(Duration delay) {
            this.inProgressDelay = Validation.notNegative("inProgressDelay", delay);
            return this;
        }

        /**
         * @param policy what to do with messages without a message-id (default {@link MissingIdPolicy#reject()})
         * @return this builder
         */
        public Builder missingIdPolicy(MissingIdPolicy policy) {
            this.missingIdPolicy = Objects.requireNonNull(policy, "missingIdPolicy must not be null");
            return this;
        }

        /**
         * Puts this subscription's receiver on a session shared with every other subscription of the same group.
         * By default each subscription has a session of its own.
         *
         * @param group the group name
         * @return this builder
         */
        public Builder sessionGroup(String group) {
            this.sessionGroup = Validation.notBlank("sessionGroup", group);
            return this;
        }

        /**
         * @param name the AMQP link name (default: chosen by the client); needed for durable subscriptions
         * @return this builder
         */
        public Builder linkName(String name) {
            this.linkName = Validation.notBlank("linkName", name);
            return this;
        }

        /**
         * @param size transactional mode: commit after this many settled deliveries (default 100)
         * @param time transactional mode: commit at the latest this long after the first one (default 50 ms)
         * @return this builder
         */
        public Builder transactionBatch(int size, Duration time) {
            this.transactionBatchSize = Validation.atLeast("transactionBatchSize", 1, size);
            this.transactionBatchTime = Validation.positive("transactionBatchTime", time);
            return this;
        }

        /**
         * @param renew whether to renew a claim's lease while its handler runs (default true; needs a
         *     {@link org.acemq.amqp.api.LeasedIdempotencyStore})
         * @return this builder
         */
        public Builder renewLeases(boolean renew) {
            this.renewLeases = renew;
            return this;
        }

        /**
         * @param autoStartup false to leave the subscription stopped when the consumer starts: no link, no deliveries,
         *     until {@link SubscriptionControl#start()} (default true). Only {@link AcknowledgementMode#AT_LEAST_ONCE}
         *     subscriptions can be started later
         * @return this builder
         */
        public Builder autoStartup(boolean autoStartup) {
            this.autoStartup = autoStartup;
            return this;
        }

        /**
         * Sets the scope of this subscription's keys: the namespace in which a key counts as seen. Every store key is
         * {@code <scope>|<key>}, so the same message consumed through two endpoints with different scopes is handled
         * once by each, and two consumers with the same scope absorb each other's copies.
         *
         * <p>By default (no scope set) the scope is the endpoint the messages come from:
         * <ul>
         *   <li>the address, for a queue (the default {@link SourceCapability#QUEUE} or {@link SourceCapability#NONE}):
         *       every instance of a service consuming one queue, whatever its link or subscription names, shares it
         *       (competing consumers), and two queues fed by one address (fan-out) have two;</li>
         *   <li>the address plus a token drawn when the consumer is built, for a node the broker creates for each
         *       link: {@link SourceCapability#TOPIC}, and RabbitMQ's {@code /exchange/…}, {@code /exchanges/…} and
         *       {@code /topic/…} addresses: each link gets every message, so each has a scope of its own;</li>
         *   <li>prefixed with the consumer's {@link AmqpConsumer.Builder#scopePrefix scopePrefix} when one is set.</li>
         * </ul>
         * A scope set here is used as it is (no prefix). Set one to keep a scope when a queue is renamed or moved, or
         * to make two services deliberately share their keys.
         *
         * @param scope the scope; not blank, no NUL character, at most
         *     {@value org.acemq.amqp.api.MessageIds#MAX_SCOPE_LENGTH} characters
         * @return this builder
         */
        public Builder scope(String scope) {
            org.acemq.amqp.api.MessageIds.escapeScope(scope);
            this.scope = scope;
            return this;
        }

        /**
         * @param source where each message's idempotency key comes from (default {@link KeySource#messageId()})
         * @return this builder
         */
        public Builder key(KeySource source) {
            this.keySource = Objects.requireNonNull(source, "key source must not be null");
            return this;
        }

        /**
         * @param fingerprint whether and how a copy that differs is told from a duplicate (default
         *     {@link Fingerprint#body()}); {@link Fingerprint#off()} to turn the check off
         * @return this builder
         */
        public Builder fingerprint(Fingerprint fingerprint) {
            this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint must not be null");
            return this;
        }

        /**
         * Lets the application take over deliveries about to be rejected (poison, permanent failures, undecodable
         * messages, ...): see {@link RejectionHandler} for when it is called and what its answer does.
         *
         * @param handler the handler, or null for none (the default: rejections proceed as decided)
         * @return this builder
         */
        public Builder rejectionHandler(RejectionHandler handler) {
            this.rejectionHandler = handler;
            return this;
        }

        /**
         * Runs the handlers on the application's executor instead of threads the consumer starts, for example virtual
         * threads on Java 21+ ({@code Executors.newVirtualThreadPerTaskExecutor()}). The consumer still runs at most
         * {@link #concurrency(int)} handlers at once: it submits that many long-running tasks, each of which takes
         * and handles deliveries one at a time until the consumer closes. The executor should run all of them at once: a
         * pool of fewer threads runs only as many handlers as it has threads, and an executor that rejects one of the
         * tasks fails the consumer's start. The consumer does not shut the executor down.
         *
         * @param executor the executor, or null for threads of the consumer's own (the default)
         * @return this builder
         */
        public Builder handlerExecutor(Executor executor) {
            this.handlerExecutor = executor;
            return this;
        }

        /**
         * Orders processing by a key: deliveries with the same key run one at a time, in the order they arrived;
         * deliveries with different keys run side by side, up to the concurrency. A delivery whose key is absent runs
         * as in an unordered subscription. A transient failure holds its key: the delivery is retried in place (held for
         * the retry back-off, its claim released and claimed again, its handler run again) while the later deliveries
         * of its key wait; after {@code maxAttempts} it is rejected as usual and the next one runs. Across several
         * consumers of one queue, order holds only where the broker gives each key to one consumer (Artemis message
         * groups by {@code group-id}, RabbitMQ single active consumer): docs/processing-modes.md.
         *
         * @param key where the ordering key comes from, for example {@link KeySource#groupId()} (AMQP {@code
         *     group-id}) or {@link KeySource#applicationProperty(String)}
         * @return this builder
         */
        public Builder orderBy(KeySource key) {
            this.orderBy = Objects.requireNonNull(key, "key must not be null");
            return this;
        }

        /**
         * @param deliveries how many deliveries of one ordering key hold a place in the window (received, waiting or
         *     running; default {@value #DEFAULT_KEY_BACKLOG}); later ones of a busy key are parked beyond the window
         *     so that one hot key cannot take all the credit
         * @return this builder
         */
        public Builder keyBacklog(int deliveries) {
            this.keyBacklog = Validation.atLeast("keyBacklog", 1, deliveries);
            return this;
        }

        /**
         * @param deliveries how many deliveries of busy keys may be parked beyond the window (default
         *     {@value #DEFAULT_PARKED_LIMIT}); when that many are, the subscription takes no more until some ran. A cap on
         *     the count beside {@link #parkedBytes(long)}, which normally applies first; 0 parks at most what one take
         *     from the client brings
         * @return this builder
         */
        public Builder parkedLimit(int deliveries) {
            this.parkedLimit = Validation.atLeast("parkedLimit", 0, deliveries);
            return this;
        }

        /**
         * Bounds the memory that parked deliveries hold. Each weighs its encoded size (the bytes of its transfer frames,
         * known without decoding) plus {@link Subscription#PARKED_DELIVERY_OVERHEAD} (an estimate of the objects around
         * it). While the parked deliveries weigh this much or more, or {@link #parkedLimit(int)} of them are parked, the
         * subscription takes no more from the client until some ran; what the broker sent meanwhile waits in the client,
         * holding its credit. Memory held by an ordered subscription: its window plus about this many bytes (plus at
         * most what one take from the client brings beyond the bound).
         *
         * @param bytes what parked deliveries may weigh (default {@value #DEFAULT_PARKED_BYTES}, 64 MiB); 0 parks at
         *     most what one take from the client brings
         * @return this builder
         */
        public Builder parkedBytes(long bytes) {
            this.parkedBytes = Validation.atLeast("parkedBytes", 0L, bytes);
            return this;
        }

        /**
         * @param messages the most messages a batch handler gets in one call (default {@value #DEFAULT_BATCH_SIZE});
         *     only for {@link Subscription#batchBuilder}; the window ({@code concurrency + prefetch}) must hold at
         *     least one batch
         * @return this builder
         */
        public Builder batchSize(int messages) {
            this.batchSize = Validation.atLeast("batchSize", 1, messages);
            return this;
        }

        /**
         * @param time how long a batch waits to fill before its handler runs with what arrived (default 100 ms); only
         *     for {@link Subscription#batchBuilder}
         * @return this builder
         */
        public Builder batchTime(Duration time) {
            this.batchTime = Validation.notNegative("batchTime", time);
            return this;
        }

        /** @return the subscription */
        public Subscription build() {
            if (batchHandler != null && orderBy != null) {
                throw new IllegalArgumentException("orderBy must not be set on a batch subscription (batches are not "
                        + "ordered per key), but was " + orderBy);
            }
            if (batchHandler == null && (batchSize != DEFAULT_BATCH_SIZE || !batchTime.equals(DEFAULT_BATCH_TIME))) {
                throw new IllegalArgumentException("batchSize and batchTime apply to batch subscriptions only "
                        + "(Subscription.batchBuilder), but this one has a per-message handler");
            }
            if (batchHandler != null && batchSize > concurrency + prefetch) {
                throw new IllegalArgumentException("concurrency + prefetch must hold at least one batch (batchSize "
                        + batchSize + "), but was " + (concurrency + prefetch) + "; raise prefetch");
            }
            if (acknowledgementMode == AcknowledgementMode.TRANSACTIONAL && sessionGroup != null) {
                throw new IllegalArgumentException("sessionGroup must not be set with TRANSACTIONAL acknowledgement"
                        + " (a transaction spans its whole session), but was '" + sessionGroup + "'");
            }
            if (!autoStartup && acknowledgementMode != AcknowledgementMode.AT_LEAST_ONCE) {
                throw new IllegalArgumentException("autoStartup(false) needs AT_LEAST_ONCE acknowledgement (only such a "
                        + "subscription can be started while the consumer runs), but was " + acknowledgementMode);
            }
            return new Subscription(this);
        }
    }
}

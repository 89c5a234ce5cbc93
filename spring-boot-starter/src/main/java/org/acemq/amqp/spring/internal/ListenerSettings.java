package org.acemq.amqp.spring.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.SourceCapability;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.spring.AcemqProperties;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.util.unit.DataSize;

/**
 * The settings of one listener: its {@code acemq.listeners.<name>.*} properties over its annotation's attributes,
 * and the one place where they are applied to a {@link Subscription.Builder}. A setting set in neither keeps the
 * runtime's default.
 */
final class ListenerSettings {

    /** The {@code orderBy} value that orders by the AMQP group-id (any other value is a SpEL expression). */
    static final String GROUP_ID = "group-id";

    private final String name;
    private final String source;
    private final Map<String, String> attributes;
    private final AcemqProperties.Listener properties;
    private final Set<Class<? extends Throwable>> permanentFailures = new LinkedHashSet<>();
    private KeyExpression.PayloadReader payload;
    private ListenerBeans beans = ListenerBeans.NONE;

    /** The application's beans a listener names (its RejectionHandler, its handler Executor), as it can reach them. */
    interface ListenerBeans {

        /** No bean factory: no default handler, and a named one cannot be found. */
        ListenerBeans NONE = new ListenerBeans() {
            @Override
            public <T> T named(String beanName, Class<T> type) {
                return null;
            }

            @Override
            public RejectionHandler fallback() {
                return null;
            }
        };

        /**
         * @param beanName a bean name
         * @param type the type it must have
         * @return the bean of that name and type, or null if there is none
         */
        <T> T named(String beanName, Class<T> type);

        /** @return the handler of listeners that name none: the only or primary bean, or null */
        RejectionHandler fallback();
    }

    /**
     * @param name the listener's name (the key of its properties)
     * @param source where the listener is declared, for messages
     * @param attributes the annotation's resolved attributes (absent = not set)
     * @param annotationPermanentFailures the annotation's permanent failure types
     * @param properties its properties (all null = not set)
     */
    ListenerSettings(String name, String source, Map<String, String> attributes,
            Iterable<Class<? extends Throwable>> annotationPermanentFailures, AcemqProperties.Listener properties) {
        this(name, source, attributes, annotationPermanentFailures, properties, Envelope::body);
    }

    /**
     * @param name the listener's name (the key of its properties)
     * @param source where the listener is declared, for messages
     * @param attributes the annotation's resolved attributes (absent = not set)
     * @param annotationPermanentFailures the annotation's permanent failure types
     * @param properties its properties (all null = not set)
     * @param payload reads a message's payload as the listener method receives it, for a key expression
     */
    ListenerSettings(String name, String source, Map<String, String> attributes,
            Iterable<Class<? extends Throwable>> annotationPermanentFailures, AcemqProperties.Listener properties,
            KeyExpression.PayloadReader payload) {
        this.payload = payload;
        this.name = name;
        this.source = source;
        this.attributes = attributes;
        this.properties = properties;
        annotationPermanentFailures.forEach(permanentFailures::add);
        permanentFailures.addAll(properties.getPermanentFailures());
    }

    /**
     * @param reader reads a message's payload as the listener method receives it, for key and order expressions
     * @return this
     */
    ListenerSettings payload(KeyExpression.PayloadReader reader) {
        this.payload = reader;
        return this;
    }

    /** @return the listener's name */
    String name() {
        return name;
    }

    /** @return the address, from the properties or the annotation */
    String address() {
        String address = pick(properties.getAddress(), "address", Function.identity());
        if (address == null) {
            throw invalid("has no address: set address on @AcemqListener or acemq.listeners." + name
                    + ".address");
        }
        return address;
    }

    /**
     * @return the name of the connection the listener consumes on: from the properties or the annotation, else
     *     {@value AcemqProperties#DEFAULT_CONNECTION}
     */
    String connection() {
        String connection = pick(properties.getConnection(), "connection", Function.identity());
        return connection == null || connection.isBlank() ? AcemqProperties.DEFAULT_CONNECTION : connection.trim();
    }

    /**
     * @param handlers where the listener's rejection handler is looked up
     * @return this
     */
    ListenerSettings beans(ListenerBeans handlers) {
        this.beans = handlers;
        return this;
    }

    /**
     * @return whether the handler and the confirm run in one database transaction: {@code databaseTransaction}, or
     *     its deprecated alias {@code transactional} (never both, in the attributes or in the properties)
     */
    @SuppressWarnings("deprecation")
    boolean databaseTransaction() {
        if (attributes.containsKey("databaseTransaction") && attributes.containsKey("transactional")) {
            throw invalid("sets both databaseTransaction and transactional, its deprecated former name; keep "
                    + "databaseTransaction only");
        }
        if (properties.getDatabaseTransaction() != null && properties.getTransactional() != null) {
            throw invalid("acemq.listeners." + name + ".database-transaction and .transactional, its deprecated "
                    + "former name, are both set; keep database-transaction only");
        }
        Boolean property = properties.getDatabaseTransaction() != null ? properties.getDatabaseTransaction()
                : properties.getTransactional();
        String attribute = attributes.containsKey("databaseTransaction") ? "databaseTransaction" : "transactional";
        Boolean value = pick(property, attribute, v -> bool(attribute, v));
        return value != null && value;
    }

    /**
     * @return the listener's rejection handler: the bean its {@code rejectionHandler} names, else the application's
     *     default one, else null
     */
    RejectionHandler rejectionHandler() {
        String beanName = pick(properties.getRejectionHandler(), "rejectionHandler", Function.identity());
        if (beanName == null) {
            return beans.fallback();
        }
        return named("rejectionHandler", beanName, RejectionHandler.class);
    }

    /** @return the bean {@code attribute} names, which must be of {@code type} */
    private <T> T named(String attribute, String beanName, Class<T> type) {
        T bean = beans.named(beanName, type);
        if (bean == null) {
            throw invalid(attribute + " names '" + beanName + "', which is not a bean of type " + type.getName());
        }
        return bean;
    }

    /** @return the transaction manager's bean name, or null for the only one */
    String transactionManager() {
        return pick(properties.getTransactionManager(), "transactionManager", Function.identity());
    }

    /** @return the listener's id: its {@code id} attribute, else its name */
    String id() {
        String id = attributes.get("id");
        return id != null ? id : name;
    }

    /**
     * @param global {@code acemq.consumer.idle-event-interval}, or null
     * @return how long the listener must be idle for an idle event, or null for none
     */
    Duration idleEventInterval(Duration global) {
        try {
            Duration d = pick(properties.getIdleEventInterval(), "idleEventInterval",
                    v -> duration("idleEventInterval", v));
            d = d != null ? d : global;
            if (d != null && (d.isNegative() || d.isZero())) {
                throw new IllegalArgumentException("idleEventInterval must be positive, but was " + d);
            }
            return d;
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage(), e);
        }
    }

    /**
     * @return whether the listener takes messages a batch at a time ({@code batch}); {@code batchSize} and
     *     {@code batchTime} apply to such listeners only
     */
    boolean batch() {
        try {
            Boolean value = pick(properties.getBatch(), "batch", v -> bool("batch", v));
            return value != null && value;
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage(), e);
        }
    }

    /**
     * @param handler the listener's handler
     * @return the subscription
     * @throws IllegalStateException naming the listener when a setting is invalid
     */
    Subscription build(org.acemq.amqp.api.MessageHandler handler) {
        return build(applyTo(Subscription.builder(address(), handler)));
    }

    /**
     * @param handler the batch listener's handler
     * @return the subscription
     * @throws IllegalStateException naming the listener when a setting is invalid
     */
    Subscription buildBatch(org.acemq.amqp.api.BatchHandler handler) {
        return build(applyTo(Subscription.batchBuilder(address(), handler)));
    }

    private Subscription build(Subscription.Builder b) {
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage(), e);
        }
    }

    /**
     * Applies every Subscription setting that is set. {@code address} and the handler are the builder's own
     * arguments ({@link Subscription#builder}); everything else a {@link Subscription.Builder} offers is here.
     *
     * @param b the builder
     * @return {@code b}
     */
    Subscription.Builder applyTo(Subscription.Builder b) {
        try {
            b.name(name);
            set(properties.getConcurrency(), "concurrency", v -> integer("concurrency", v), b::concurrency);
            set(properties.getPrefetch(), "prefetch", v -> integer("prefetch", v), b::prefetch);
            set(properties.getAcknowledgementMode(), "acknowledgementMode",
                    v -> enumValue("acknowledgementMode", AcknowledgementMode.class, v), b::acknowledgementMode);
            set(properties.getMaxAttempts(), "maxAttempts", v -> integer("maxAttempts", v), b::maxAttempts);
            if (!permanentFailures.isEmpty()) {
                @SuppressWarnings("unchecked")
                Class<? extends Throwable>[] types = permanentFailures.toArray(new Class[0]);
                b.permanentFailure(types);
            }
            set(properties.getTransientFailureOutcome(), "transientFailureOutcome",
                    v -> enumValue("transientFailureOutcome", Outcome.class, v), b::transientFailureOutcome);
            RetryBackoff backoff = retryBackoff();
            if (backoff != null) {
                b.retryBackoff(backoff);
            }
            set(properties.getSourceCapability(), "sourceCapability",
                    v -> enumValue("sourceCapability", SourceCapability.class, v), b::sourceCapability);
            set(properties.getInProgressDelay(), "inProgressDelay", v -> duration("inProgressDelay", v),
                    b::inProgressDelay);
            MissingIdPolicy policy = missingIdPolicy();
            if (policy != null) {
                b.missingIdPolicy(policy);
            }
            set(properties.getSessionGroup(), "sessionGroup", Function.identity(), b::sessionGroup);
            set(properties.getLinkName(), "linkName", Function.identity(), b::linkName);
            Integer batchSize = pick(properties.getTransactionBatchSize(), "transactionBatchSize",
                    v -> integer("transactionBatchSize", v));
            Duration batchTime = pick(properties.getTransactionBatchTime(), "transactionBatchTime",
                    v -> duration("transactionBatchTime", v));
            if (batchSize != null || batchTime != null) {
                b.transactionBatch(batchSize != null ? batchSize : Subscription.DEFAULT_TRANSACTION_BATCH_SIZE,
                        batchTime != null ? batchTime : Subscription.DEFAULT_TRANSACTION_BATCH_TIME);
            }
            set(properties.getRenewLeases(), "renewLeases", v -> bool("renewLeases", v), b::renewLeases);
            set(properties.getAutoStartup(), "autoStartup", v -> bool("autoStartup", v), b::autoStartup);
            set(properties.getScope(), "scope", Function.identity(), b::scope);
            KeySource key = key();
            if (key != null) {
                b.key(key);
            }
            Fingerprint fingerprint = fingerprint();
            if (fingerprint != null) {
                b.fingerprint(fingerprint);
            }
            RejectionHandler rejectionHandler = rejectionHandler();
            if (rejectionHandler != null) {
                b.rejectionHandler(rejectionHandler);
            }
            String executor = pick(properties.getHandlerExecutor(), "handlerExecutor", Function.identity());
            if (executor != null) {
                b.handlerExecutor(named("handlerExecutor", executor, java.util.concurrent.Executor.class));
            }
            KeySource orderBy = orderBy();
            if (orderBy != null) {
                b.orderBy(orderBy);
            }
            set(properties.getKeyBacklog(), "keyBacklog", v -> integer("keyBacklog", v), b::keyBacklog);
            set(properties.getParkedLimit(), "parkedLimit", v -> integer("parkedLimit", v), b::parkedLimit);
            set(properties.getParkedBytes(), "parkedBytes", v -> dataSize("parkedBytes", v),
                    size -> b.parkedBytes(size.toBytes()));
            applyBatch(b);
            return b;
        } catch (IllegalArgumentException | NullPointerException e) {
            throw invalid(e.getMessage(), e);
        }
    }

    /** batchSize and batchTime, on a batch listener only (they mean nothing to another). */
    private void applyBatch(Subscription.Builder b) {
        Integer size = pick(properties.getBatchSize(), "batchSize", v -> integer("batchSize", v));
        Duration time = pick(properties.getBatchTime(), "batchTime", v -> duration("batchTime", v));
        if ((size != null || time != null) && !batch()) {
            throw new IllegalArgumentException("batchSize and batchTime apply to batch listeners only (batch = \"true\","
                    + " acemq.listeners." + name + ".batch=true), but batch is not set and "
                    + (size != null ? "batchSize is " + size : "batchTime is " + time));
        }
        if (size != null) {
            b.batchSize(size);
        }
        if (time != null) {
            b.batchTime(time);
        }
    }

    /**
     * What processing is ordered by: {@code orderBy} ({@code group-id}, or a SpEL expression) or
     * {@code orderByProperty}, one of the two; set in properties, they replace the annotation's. Null when neither is
     * set anywhere.
     */
    private KeySource orderBy() {
        String expression;
        String property;
        if (properties.getOrderBy() != null || properties.getOrderByProperty() != null) {
            expression = properties.getOrderBy();
            property = properties.getOrderByProperty();
        } else {
            expression = attributes.get("orderBy");
            property = attributes.get("orderByProperty");
        }
        if (expression != null && property != null) {
            throw new IllegalArgumentException("orderBy and orderByProperty must not both be set, but were '"
                    + expression + "' and '" + property + "'");
        }
        if (property != null) {
            return KeySource.applicationProperty(property.trim());
        }
        if (expression == null) {
            return null;
        }
        if (GROUP_ID.equalsIgnoreCase(expression.trim())) {
            return KeySource.groupId();
        }
        return KeyExpression.parse("orderBy", expression, payload);
    }

    /** The back-off if any of its four values is set (the others keep the runtime default's), else null. */
    private RetryBackoff retryBackoff() {
        AcemqProperties.RetryBackoff p = properties.getRetryBackoff();
        Duration first = pick(p.getFirst(), "retryBackoffFirst", v -> duration("retryBackoffFirst", v));
        Duration max = pick(p.getMax(), "retryBackoffMax", v -> duration("retryBackoffMax", v));
        Double multiplier = pick(p.getMultiplier(), "retryBackoffMultiplier",
                v -> decimal("retryBackoffMultiplier", v));
        Double jitter = pick(p.getJitter(), "retryBackoffJitter", v -> decimal("retryBackoffJitter", v));
        if (first == null && max == null && multiplier == null && jitter == null) {
            return null;
        }
        RetryBackoff d = RetryBackoff.DEFAULT;
        Duration firstOrDefault = first != null ? first : d.first();
        // a first delay above the default max (and no max given) raises the max with it rather than failing
        Duration maxOrDefault = max != null ? max : (firstOrDefault.compareTo(d.max()) > 0 ? firstOrDefault : d.max());
        return RetryBackoff.of(firstOrDefault, maxOrDefault, multiplier != null ? multiplier : d.multiplier(),
                jitter != null ? jitter : d.jitter());
    }

    /**
     * The key source: {@code key} (a SpEL expression) or {@code keyProperty}, one of the two; set in properties, they
     * replace the annotation's (whichever of the two it sets). Null when neither is set anywhere.
     */
    private KeySource key() {
        String expression;
        String property;
        if (properties.getKey() != null || properties.getKeyProperty() != null) {
            expression = properties.getKey();
            property = properties.getKeyProperty();
        } else {
            expression = attributes.get("key");
            property = attributes.get("keyProperty");
        }
        if (expression != null && property != null) {
            throw new IllegalArgumentException("key and keyProperty must not both be set, but were '" + expression
                    + "' and '" + property + "'");
        }
        if (property != null) {
            return KeySource.applicationProperty(property);
        }
        return expression == null ? null : KeyExpression.parse(expression, payload);
    }

    /**
     * The fingerprint if any of its three settings is set, else null. {@code fingerprint: off} in properties
     * overrides the annotation's {@code fingerprintProperties} and {@code onConflict}; set beside it at the same
     * level (or in properties while the annotation says off) they contradict it and fail.
     */
    private Fingerprint fingerprint() {
        String mode = pick(properties.getFingerprint(), "fingerprint", Function.identity());
        List<String> names = pick(properties.getFingerprintProperties(), "fingerprintProperties",
                ListenerSettings::commaSeparated);
        Fingerprint.Action action = pick(properties.getOnConflict(), "onConflict",
                v -> enumValue("onConflict", Fingerprint.Action.class, v));
        if (mode == null && names == null && action == null) {
            return null;
        }
        if (mode != null && !fingerprintEnabled(mode)) {
            // what a property "off" overrides (the annotation's) is dropped; anything else contradicts it
            boolean offInProperties = properties.getFingerprint() != null;
            boolean namesContradict = names != null && !names.isEmpty()
                    && (properties.getFingerprintProperties() != null || !offInProperties);
            boolean actionContradicts = action != null && (properties.getOnConflict() != null || !offInProperties);
            if (namesContradict || actionContradicts) {
                throw new IllegalArgumentException("fingerprintProperties and onConflict must not be set when "
                        + "fingerprint is off, but were " + (namesContradict ? names : "not set") + " and "
                        + (actionContradicts ? action : "not set"));
            }
            return Fingerprint.off();
        }
        Fingerprint fingerprint = Fingerprint.body();
        if (names != null && !names.isEmpty()) {
            fingerprint = fingerprint.withProperties(names.toArray(new String[0]));
        }
        return action == null ? fingerprint : fingerprint.onConflict(action);
    }

    private static boolean fingerprintEnabled(String value) {
        String v = value.trim();
        if ("body".equalsIgnoreCase(v)) {
            return true;
        }
        if ("off".equalsIgnoreCase(v)) {
            return false;
        }
        throw new IllegalArgumentException("fingerprint must be body or off, but was '" + value + "'");
    }

    private static List<String> commaSeparated(String value) {
        List<String> names = new ArrayList<>();
        for (String name : value.split(",")) {
            if (!name.isBlank()) {
                names.add(name.trim());
            }
        }
        return names;
    }

    private MissingIdPolicy missingIdPolicy() {
        MissingIdPolicy.Kind kind = pick(properties.getMissingIdPolicy(), "missingIdPolicy",
                v -> enumValue("missingIdPolicy", MissingIdPolicy.Kind.class, v));
        String property = pick(properties.getMissingIdProperty(), "missingIdProperty", Function.identity());
        if (kind == null) {
            return property == null ? null : MissingIdPolicy.applicationProperty(property);
        }
        switch (kind) {
            case REJECT:
                return MissingIdPolicy.reject();
            case BODY_HASH:
                return MissingIdPolicy.bodyHash();
            default:
                if (property == null) {
                    throw new IllegalArgumentException("missingIdProperty must be set when missingIdPolicy is "
                            + "APPLICATION_PROPERTY, but was not set");
                }
                return MissingIdPolicy.applicationProperty(property);
        }
    }

    /** The property if set, else the parsed attribute if set, else null. */
    private <T> T pick(T property, String attribute, Function<String, T> parse) {
        if (property != null) {
            return property;
        }
        String raw = attributes.get(attribute);
        return raw == null ? null : parse.apply(raw);
    }

    private <T> void set(T property, String attribute, Function<String, T> parse, Consumer<T> setter) {
        T value = pick(property, attribute, parse);
        if (value != null) {
            setter.accept(value);
        }
    }

    private static int integer(String setting, String value) {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(setting + " must be an integer, but was '" + value + "'");
        }
    }

    private static DataSize dataSize(String setting, String value) {
        try {
            return DataSize.parse(value.trim());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(setting + " must be a data size such as 64MB, 512KB or a number of bytes, "
                    + "but was '" + value + "'");
        }
    }

    private static double decimal(String setting, String value) {
        try {
            return Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(setting + " must be a number, but was '" + value + "'");
        }
    }

    private static boolean bool(String setting, String value) {
        if ("true".equalsIgnoreCase(value)) {
            return true;
        }
        if ("false".equalsIgnoreCase(value)) {
            return false;
        }
        throw new IllegalArgumentException(setting + " must be true or false, but was '" + value + "'");
    }

    private static Duration duration(String setting, String value) {
        try {
            return DurationStyle.detectAndParse(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(setting + " must be a duration such as 500ms, 2s or PT2S, but was '"
                    + value + "'");
        }
    }

    private static <E extends Enum<E>> E enumValue(String setting, Class<E> type, String value) {
        String normalised = value.trim().replace('-', '_').toUpperCase(Locale.ROOT);
        for (E constant : type.getEnumConstants()) {
            if (constant.name().equals(normalised)) {
                return constant;
            }
        }
        throw new IllegalArgumentException(setting + " must be one of " + java.util.Arrays.toString(
                type.getEnumConstants()) + ", but was '" + value + "'");
    }

    private IllegalStateException invalid(String problem) {
        return invalid(problem, null);
    }

    private IllegalStateException invalid(String problem, Throwable cause) {
        return new IllegalStateException("AceMQ listener '" + name + "' (" + source + "): " + problem, cause);
    }
}

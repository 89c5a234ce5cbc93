package org.acemq.amqp.consumer.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.SourceCapability;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What makes two deliveries of a subscription "the same message": the scope of its keys, the key of each message
 * (from its {@link KeySource}, or its {@link MissingIdPolicy} when the message-id is missing), and the fingerprint of
 * its content. Built once per subscription; {@link #key} and {@link #fingerprint} run on the intake thread.
 */
final class Keys {

    private static final Logger LOG = LoggerFactory.getLogger(Keys.class);
    private static final HexFormat HEX = HexFormat.of();
    /** One digest per intake thread: looking one up costs more than hashing a small body. */
    private static final ThreadLocal<MessageDigest> DIGEST = ThreadLocal.withInitial(MessageKeys::newSha256);
    /** RabbitMQ address forms that give each link a queue of its own (3.x and 4.x). */
    private static final List<String> PER_LINK_PREFIXES = List.of("/exchange/", "/exchanges/", "/topic/");

    private final String name;
    private final String scope;
    private final String escapedScope;
    private final KeySource source;
    private final MissingIdPolicy missing;
    private final Fingerprint fingerprint;
    private final String[] fingerprintProperties;
    private final KeySource orderBy;

    /**
     * @param spec the subscription
     * @param scopePrefix the consumer's prefix for derived scopes, or null
     */
    Keys(Subscription spec, String scopePrefix) {
        this.name = spec.name();
        this.scope = scopeOf(spec, scopePrefix, linkToken());
        this.escapedScope = MessageIds.escapeScope(scope);
        this.source = spec.keySource();
        this.missing = spec.missingIdPolicy();
        this.fingerprint = spec.fingerprint();
        this.fingerprintProperties = fingerprint.properties().toArray(new String[0]);
        this.orderBy = spec.orderBy().orElse(null);
    }

    /**
     * The scope rule (README "What counts as a duplicate"): an explicit scope as it is; otherwise the endpoint the
     * messages come from, prefixed with the consumer's prefix: the address of a queue (shared by its competing
     * consumers), or the address plus a token for a node the broker makes per link (each link gets every message).
     *
     * @param token a token that tells this consumer instance's links apart from every other's
     */
    static String scopeOf(Subscription spec, String prefix, String token) {
        if (spec.scope().isPresent()) {
            return spec.scope().get();
        }
        String endpoint = spec.address();
        if (perLink(spec)) {
            endpoint = endpoint + "#" + token;
        }
        String scope = prefix == null ? endpoint : prefix + "/" + endpoint;
        try {
            MessageIds.escapeScope(scope);
            return scope;
        } catch (IllegalArgumentException e) {
            // an address too long (or unstorable) for a scope: its hash, still one scope per endpoint
            return MessageKeys.hashed(scope);
        }
    }

    /** @return whether the broker gives each link of this subscription a node (and so every message) of its own */
    static boolean perLink(Subscription spec) {
        if (spec.sourceCapability() == SourceCapability.TOPIC) {
            return true;
        }
        for (String prefix : PER_LINK_PREFIXES) {
            if (spec.address().startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static String linkToken() {
        return Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
    }

    /** @return the scope of this subscription's keys */
    String scope() {
        return scope;
    }

    /** @return whether keys or fingerprints are computed from the body (so {@link BodyForm} is worth reading) */
    boolean readsBody() {
        return fingerprint.enabled()
                || source.kind() == KeySource.Kind.MESSAGE_ID && missing.kind() == MissingIdPolicy.Kind.BODY_HASH;
    }

    /**
     * @param message the decoded message
     * @param envelope its envelope (for a key function)
     * @return the store key, or null if the message has none (the policy then rejects it)
     */
    String key(Message<?> message, EnvelopeImpl envelope) throws ClientException {
        return key(message, envelope, null);
    }

    /**
     * @param message the decoded message
     * @param envelope its envelope (for a key function)
     * @param body its body's form read from its encoding, or null to compute it from the decoded message
     * @return the store key, or null if the message has none (the policy then rejects it)
     */
    String key(Message<?> message, EnvelopeImpl envelope, BodyForm body) throws ClientException {
        String key = switch (source.kind()) {
            case MESSAGE_ID -> fromMessageId(message, body);
            case APPLICATION_PROPERTY -> MessageKeys.property(source.name(), message.property(source.name()));
            case FUNCTION -> fromFunction(envelope);
            case GROUP_ID -> message.groupId() == null || message.groupId().isEmpty() ? null
                    : "g:" + message.groupId();
        };
        return MessageKeys.inScope(escapedScope, key);
    }

    private String fromMessageId(Message<?> message, BodyForm body) throws ClientException {
        String key = MessageKeys.typed(message.messageId());
        if (key != null) {
            return key;
        }
        return switch (missing.kind()) {
            case APPLICATION_PROPERTY -> MessageKeys.property(missing.property(), message.property(missing.property()));
            case BODY_HASH -> MessageKeys.fromBodyBytes(BodyBytes.of(message, body));
            case REJECT -> null;
        };
    }

    private String fromFunction(EnvelopeImpl envelope) {
        String inner = fromFunction(envelope, source);
        return inner == null ? null : "k:" + inner;
    }

    /** @return the function's value, typed; null if it returned null or threw (logged) */
    private String fromFunction(EnvelopeImpl envelope, KeySource source) {
        Object value;
        try {
            value = source.function().apply(envelope);
        } catch (RuntimeException e) {
            LOG.warn("Subscription '{}': the key function {} failed on message {}: {}", name, source,
                    LogSafe.id(String.valueOf(envelope.messageId())), Errors.describe(e));
            return null;
        }
        return MessageKeys.typed(value);
    }

    /**
     * @param message the decoded message
     * @param envelope its envelope
     * @return the key its processing is ordered by, or null when the subscription does not order
     */
    String orderKey(Message<?> message, EnvelopeImpl envelope) throws ClientException {
        if (orderBy == null) {
            return null;
        }
        return switch (orderBy.kind()) {
            case GROUP_ID -> message.groupId();
            case MESSAGE_ID -> MessageKeys.typed(message.messageId());
            case APPLICATION_PROPERTY -> MessageKeys.typed(message.property(orderBy.name()));
            case FUNCTION -> fromFunction(envelope, orderBy);
        };
    }

    /** @return whether the subscription orders by a key (its parked deliveries are counted by size) */
    boolean orders() {
        return orderBy != null;
    }

    /** @return whether fingerprints are computed */
    boolean fingerprints() {
        return fingerprint.enabled();
    }

    /**
     * @param message the decoded message
     * @return its fingerprint (32 hexadecimal digits), or null when fingerprints are off
     */
    String fingerprint(Message<?> message) throws ClientException {
        return fingerprint(message, null);
    }

    /**
     * @param message the decoded message
     * @param body its body's form read from its encoding, or null to compute it from the decoded message
     * @return its fingerprint (32 hexadecimal digits), or null when fingerprints are off
     */
    String fingerprint(Message<?> message, BodyForm body) throws ClientException {
        if (!fingerprint.enabled()) {
            return null;
        }
        MessageDigest digest = DIGEST.get();
        digest.reset();
        digest.update(BodyBytes.of(message, body));
        for (String property : fingerprintProperties) {
            Object value = message.property(property);
            digest.update((byte) 0);
            digest.update(property.getBytes(StandardCharsets.UTF_8));
            digest.update((byte) '=');
            String typed = value == null ? "-" : MessageKeys.typed(value);
            digest.update(MessageKeys.generalisedUtf8(typed == null ? "s:" : typed));
        }
        return HEX.formatHex(digest.digest(), 0, 16);
    }
}

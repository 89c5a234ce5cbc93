package org.acemq.amqp.spring.internal;

import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Function;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.SaslMechanism;
import org.acemq.amqp.consumer.TokenCredential;
import org.acemq.amqp.spring.AcemqProperties;
import org.springframework.boot.ssl.SslBundles;

/**
 * The one place where {@code acemq.connection.*} and {@code acemq.consumer.*} are applied to the runtime's builders.
 * A property left unset is not applied, so the runtime's default holds.
 */
final class ConsumerSettings {

    private ConsumerSettings() {
    }

    /**
     * @param p {@code acemq.connection.*}
     * @param sslBundles the application's SSL bundles, or null
     * @return the connection settings
     * @throws IllegalStateException naming the property when a value is invalid
     */
    static ConnectionSettings connection(AcemqProperties.Connection p, SslBundles sslBundles) {
        return connection(p, sslBundles, "acemq.connection");
    }

    /**
     * @param p the connection's properties
     * @param sslBundles the application's SSL bundles, or null
     * @param prefix the properties' prefix, for messages ({@code acemq.connections.<name>})
     * @return the connection settings
     * @throws IllegalStateException naming the property when a value is invalid
     */
    static ConnectionSettings connection(AcemqProperties.Connection p, SslBundles sslBundles, String prefix) {
        return connection(p, sslBundles, NO_BEANS, prefix);
    }

    /** A bean lookup that finds none. */
    static final Function<String, TokenCredential> NO_BEANS = name -> null;

    /**
     * @param p the connection's properties
     * @param sslBundles the application's SSL bundles, or null
     * @param tokenCredentials the application's {@link TokenCredential} beans by name (null for a name that is none)
     * @param prefix the properties' prefix, for messages ({@code acemq.connections.<name>})
     * @return the connection settings
     * @throws IllegalStateException naming the property when a value is invalid
     */
    static ConnectionSettings connection(AcemqProperties.Connection p, SslBundles sslBundles,
            Function<String, TokenCredential> tokenCredentials, String prefix) {
        try {
            return applyTo(p, sslBundles, tokenCredentials, ConnectionSettings.builder(p.getHost(), p.getPort()))
                    .build();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalStateException(prefix + ": " + e.getMessage(), e);
        }
    }

    /**
     * @param properties every {@code acemq.*} property
     * @param name a connection's name
     * @param sslBundles the application's SSL bundles, or null
     * @return the settings of that connection: {@code acemq.connection.*} for {@value AcemqProperties#DEFAULT_CONNECTION},
     *     {@code acemq.connections.<name>.*} for another name
     * @throws IllegalStateException if no connection has that name, or a value is invalid
     */
    static ConnectionSettings connection(AcemqProperties properties, String name, SslBundles sslBundles) {
        return connection(properties, name, sslBundles, NO_BEANS);
    }

    /**
     * @param properties every {@code acemq.*} property
     * @param name a connection's name
     * @param sslBundles the application's SSL bundles, or null
     * @param tokenCredentials the application's {@link TokenCredential} beans by name (null for a name that is none)
     * @return the settings of that connection
     * @throws IllegalStateException if no connection has that name, or a value is invalid
     */
    static ConnectionSettings connection(AcemqProperties properties, String name, SslBundles sslBundles,
            Function<String, TokenCredential> tokenCredentials) {
        checkConnectionNames(properties);
        if (AcemqProperties.DEFAULT_CONNECTION.equals(name)) {
            return connection(properties.getConnection(), sslBundles, tokenCredentials, "acemq.connection");
        }
        AcemqProperties.Connection p = properties.getConnections().get(name);
        if (p == null) {
            throw new IllegalStateException(unknownConnection(properties, name));
        }
        return connection(p, sslBundles, tokenCredentials, "acemq.connections." + name);
    }

    /**
     * @param properties every {@code acemq.*} property
     * @return the connection names: {@value AcemqProperties#DEFAULT_CONNECTION}, then those of
     *     {@code acemq.connections}
     */
    static java.util.Set<String> connectionNames(AcemqProperties properties) {
        checkConnectionNames(properties);
        java.util.Set<String> names = new java.util.LinkedHashSet<>();
        names.add(AcemqProperties.DEFAULT_CONNECTION);
        names.addAll(properties.getConnections().keySet());
        return names;
    }

    /** @return the message for a listener or lookup naming a connection that is not configured */
    static String unknownConnection(AcemqProperties properties, String name) {
        return "no AceMQ connection is named '" + name + "'; the connections are " + connectionNames(properties)
                + " (" + AcemqProperties.DEFAULT_CONNECTION + " is acemq.connection.*, the others acemq.connections."
                + "<name>.*)";
    }

    private static void checkConnectionNames(AcemqProperties properties) {
        if (properties.getConnections().containsKey(AcemqProperties.DEFAULT_CONNECTION)) {
            throw new IllegalStateException("acemq.connections." + AcemqProperties.DEFAULT_CONNECTION + " is set, but "
                    + "the connection named '" + AcemqProperties.DEFAULT_CONNECTION + "' is acemq.connection.*: "
                    + "configure it there, or give this one another name");
        }
    }

    /**
     * Applies every connection property that is set (host and port are the builder's own arguments).
     *
     * @param p the properties
     * @param sslBundles the SSL bundles, or null
     * @param b the builder
     * @return {@code b}
     */
    static ConnectionSettings.Builder applyTo(AcemqProperties.Connection p, SslBundles sslBundles,
            ConnectionSettings.Builder b) {
        return applyTo(p, sslBundles, NO_BEANS, b);
    }

    /**
     * Applies every connection property that is set (host and port are the builder's own arguments).
     *
     * @param p the properties
     * @param sslBundles the SSL bundles, or null
     * @param tokenCredentials the application's {@link TokenCredential} beans by name (null for a name that is none)
     * @param b the builder
     * @return {@code b}
     */
    static ConnectionSettings.Builder applyTo(AcemqProperties.Connection p, SslBundles sslBundles,
            Function<String, TokenCredential> tokenCredentials, ConnectionSettings.Builder b) {
        AcemqProperties.Token token = p.getToken();
        if (token.getCredential() != null) {
            TokenCredential credential = tokenCredentials.apply(token.getCredential());
            if (credential == null) {
                throw new IllegalArgumentException("token.credential names '" + token.getCredential() + "', which is "
                        + "not a bean of type " + TokenCredential.class.getName());
            }
            if (p.getUsername() == null) {
                throw new IllegalArgumentException("token.credential is set, but no username: the SASL mechanisms "
                        + "send one with the token (RabbitMQ ignores it)");
            }
            b.tokenCredential(p.getUsername(), credential);
            if (p.getPassword() != null) {
                b.credentials(p.getUsername(), p.getPassword()); // refused by build(): not both
            }
        } else if (p.getUsername() != null) {
            b.credentials(p.getUsername(), p.getPassword() != null ? p.getPassword() : "");
        }
        set(token.getRefreshBefore(), b::tokenRefreshBefore);
        if (!p.getSasl().getMechanisms().isEmpty()) {
            b.saslMechanisms(p.getSasl().getMechanisms().toArray(new SaslMechanism[0]));
        }
        set(p.getVirtualHost(), b::virtualHost);
        AcemqProperties.Tls tls = p.getTls();
        if (tls.isEnabled()) {
            b.tls(true);
        }
        if (tls.getBundle() != null) {
            if (sslBundles == null) {
                throw new IllegalArgumentException("tls.bundle '" + tls.getBundle() + "' is set, but the "
                        + "application has no SslBundles bean");
            }
            b.sslContext(sslBundles.getBundle(tls.getBundle()).createSslContext());
        }
        if (tls.getTrustStore() != null) {
            b.trustStore(tls.getTrustStore(), tls.getTrustStorePassword());
        }
        if (tls.getKeyStore() != null) {
            b.keyStore(tls.getKeyStore(), tls.getKeyStorePassword());
        }
        set(tls.getTrustStoreType(), b::trustStoreType);
        set(tls.getKeyStoreType(), b::keyStoreType);
        set(tls.getKeyAlias(), b::keyAlias);
        if (!tls.getProtocols().isEmpty()) {
            b.enabledProtocols(tls.getProtocols().toArray(new String[0]));
        }
        if (!tls.getCipherSuites().isEmpty()) {
            b.enabledCipherSuites(tls.getCipherSuites().toArray(new String[0]));
        }
        b.verifyHost(tls.isVerifyHost());
        AcemqProperties.Reconnect reconnect = p.getReconnect();
        set(reconnect.getEnabled(), b::reconnect);
        if (reconnect.getInitialDelay() != null || reconnect.getMaxDelay() != null) {
            b.reconnectDelay(or(reconnect.getInitialDelay(), ConnectionSettings.DEFAULT_RECONNECT_DELAY),
                    or(reconnect.getMaxDelay(), ConnectionSettings.DEFAULT_MAX_RECONNECT_DELAY));
        }
        set(reconnect.getMaxAttempts(), b::maxReconnectAttempts);
        for (String location : p.getFailover()) {
            int colon = location.lastIndexOf(':');
            int port;
            try {
                port = colon < 1 ? -1 : Integer.parseInt(location.substring(colon + 1).trim());
            } catch (NumberFormatException e) {
                port = -1;
            }
            if (port < 0) {
                throw new IllegalArgumentException("failover entries must be host:port, but one was '" + location
                        + "'");
            }
            b.failover(location.substring(0, colon).trim(), port);
        }
        set(p.getIdleTimeout(), b::idleTimeout);
        set(p.getOpenTimeout(), b::openTimeout);
        set(p.getRequestTimeout(), b::requestTimeout);
        set(p.getMaxFrameSize(), b::maxFrameSize);
        return b;
    }

    /**
     * Applies every {@code acemq.consumer.*} property that is set ({@code auto-startup} belongs to the container) to
     * the consumer of a connection; the consumer of a connection other than the default one is named
     * {@code <name>-<connection>} (its threads and logs).
     *
     * @param p the properties
     * @param connection the consumer's connection
     * @param b the builder
     * @return {@code b}
     */
    static AmqpConsumer.Builder applyTo(AcemqProperties.Consumer p, String connection, AmqpConsumer.Builder b) {
        applyTo(p, b);
        if (!AcemqProperties.DEFAULT_CONNECTION.equals(connection)) {
            try {
                b.name((p.getName() != null ? p.getName() : "acemq") + "-" + connection);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("acemq.connections." + connection + ": " + e.getMessage(), e);
            }
        }
        return b;
    }

    /**
     * Applies every {@code acemq.consumer.*} property that is set ({@code auto-startup} belongs to the container).
     *
     * @param p the properties
     * @param b the builder
     * @return {@code b}
     */
    static AmqpConsumer.Builder applyTo(AcemqProperties.Consumer p, AmqpConsumer.Builder b) {
        try {
            set(p.getName(), b::name);
            set(p.getStoreFailurePolicy(), b::storeFailurePolicy);
            set(p.getShutdownTimeout(), b::shutdownTimeout);
            set(p.getCreditCheckInterval(), b::creditCheckInterval);
            set(p.getConfirmTimeout(), b::confirmTimeout);
            if (p.getStoreRetryDelay() != null || p.getMaxStoreRetryDelay() != null) {
                b.storeRetryDelay(or(p.getStoreRetryDelay(), AmqpConsumer.DEFAULT_STORE_RETRY_DELAY),
                        or(p.getMaxStoreRetryDelay(), AmqpConsumer.DEFAULT_MAX_STORE_RETRY_DELAY));
            }
            set(p.getMaxInFlightPerConnection(), b::maxInFlightPerConnection);
            set(p.getOutboxSweepInterval(), b::outboxSweepInterval);
            set(p.getOutboxSweepMinAge(), b::outboxSweepMinAge);
            set(p.getOutboxMaxAge(), b::outboxMaxAge);
            set(p.getFailFastStart(), b::failFastStart);
            set(p.getScopePrefix(), b::scopePrefix);
            return b;
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalStateException("acemq.consumer: " + e.getMessage(), e);
        }
    }

    private static <T> void set(T value, Consumer<T> setter) {
        if (value != null) {
            setter.accept(value);
        }
    }

    private static Duration or(Duration value, Duration fallback) {
        return value != null ? value : fallback;
    }
}

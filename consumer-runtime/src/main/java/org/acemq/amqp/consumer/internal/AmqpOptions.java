package org.acemq.amqp.consumer.internal;

import java.util.List;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.SaslMechanism;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.client.ConnectionOptions;

/**
 * The consumer's connection settings as protonj2's {@link ConnectionOptions} for one connection attempt: timeouts,
 * credentials (a token credential's token as the password), SASL mechanisms, TLS, and protonj2's own reconnects
 * (off with a token credential), and where an attempt goes. Also what protonj2's frame logging would reveal of them.
 */
final class AmqpOptions {

    private AmqpOptions() {
    }

    /**
     * @param settings the connection's settings
     * @param token the token of this connection, or null without a token credential
     * @return the options of one connection attempt, without the event handlers
     */
    static ConnectionOptions of(ConnectionSettings settings, Tokens.Fetched token) {
        ConnectionOptions o = new ConnectionOptions();
        o.openTimeout(settings.openTimeout().toMillis());
        o.requestTimeout(settings.requestTimeout().toMillis());
        o.drainTimeout(settings.requestTimeout().toMillis());
        o.closeTimeout(settings.requestTimeout().toMillis());
        o.idleTimeout(settings.idleTimeout().toMillis());
        o.maxFrameSize(settings.maxFrameSize());
        if (settings.user() != null) {
            o.user(settings.user());
            o.password(token != null ? token.token().value() : settings.password());
        }
        List<SaslMechanism> allowed = List.copyOf(settings.saslMechanisms());
        if (allowed.isEmpty() && token != null) {
            allowed = List.of(SaslMechanism.XOAUTH2, SaslMechanism.PLAIN);
        }
        for (SaslMechanism m : allowed) {
            o.saslOptions().addAllowedMechanism(m.mechanismName());
        }
        if (settings.virtualHost() != null) {
            o.virtualHost(settings.virtualHost());
        }
        if (settings.tls()) {
            o.sslEnabled(true);
            o.sslOptions().verifyHost(settings.verifyHost());
            if (settings.sslContext() != null) {
                o.sslOptions().sslContextOverride(settings.sslContext());
            }
            if (settings.trustStorePath() != null) {
                o.sslOptions().trustStoreLocation(settings.trustStorePath());
                o.sslOptions().trustStorePassword(settings.trustStorePassword());
                o.sslOptions().trustStoreType(settings.trustStoreType());
            }
            if (settings.keyStorePath() != null) {
                o.sslOptions().keyStoreLocation(settings.keyStorePath());
                o.sslOptions().keyStorePassword(settings.keyStorePassword());
                o.sslOptions().keyStoreType(settings.keyStoreType());
                if (settings.keyAlias() != null) {
                    o.sslOptions().keyAlias(settings.keyAlias());
                }
            }
            if (!settings.enabledProtocols().isEmpty()) {
                o.sslOptions().enabledProtocols(settings.enabledProtocols().toArray(new String[0]));
            }
            if (!settings.enabledCipherSuites().isEmpty()) {
                o.sslOptions().enabledCipherSuites(settings.enabledCipherSuites().toArray(new String[0]));
            }
        }
        // with a token credential the connector reconnects by itself (a new token per connection)
        boolean protonj2Reconnects = settings.reconnect() && !reconnectsItself(settings);
        o.reconnectEnabled(protonj2Reconnects);
        if (protonj2Reconnects) {
            o.reconnectOptions().reconnectDelay((int) settings.reconnectDelay().toMillis());
            o.reconnectOptions().maxReconnectDelay((int) settings.maxReconnectDelay().toMillis());
            o.reconnectOptions().maxReconnectAttempts(settings.maxReconnectAttempts());
            o.reconnectOptions().useReconnectBackOff(true);
            o.reconnectOptions().maxInitialConnectionAttempts(1); // the first connection is retried by attempt()
            for (String location : settings.failoverLocations()) {
                int colon = location.lastIndexOf(':');
                o.reconnectOptions().addReconnectLocation(location.substring(0, colon),
                        Integer.parseInt(location.substring(colon + 1)));
            }
        }
        return o;
    }

    /**
     * @param credentials whether the consumer authenticates with a password or a token
     * @param frameLoggerTrace whether protonj2's frame logger is at TRACE
     * @param pnTraceFrm the environment variable {@code PN_TRACE_FRM}, or null
     * @return a warning that frame logging would print the credentials, or null
     */
    static String frameLoggingWarning(boolean credentials, boolean frameLoggerTrace, String pnTraceFrm) {
        if (!credentials) {
            return null;
        }
        boolean printed = pnTraceFrm != null && (pnTraceFrm.equalsIgnoreCase("true") || pnTraceFrm.equals("1")
                || pnTraceFrm.equalsIgnoreCase("yes"));
        if (!frameLoggerTrace && !printed) {
            return null;
        }
        return "AMQP frame logging is on (" + (printed ? "PN_TRACE_FRM prints frames to standard output" : ProtonInternals.FRAME_LOGGER
                + " at TRACE") + "): the SASL frames it logs carry the password or token in clear; turn it off "
                + "outside a test system";
    }

    /**
     * @param settings the connection's settings
     * @param attempt how many attempts failed before this one
     * @return the host and port an attempt goes to: the first location, or, when the connector reconnects by itself
     *     (protonj2 takes the failover locations on its own reconnects), each of the failover locations in turn
     */
    static String[] location(ConnectionSettings settings, int attempt) {
        List<String> failover = settings.failoverLocations();
        if (!reconnectsItself(settings) || failover.isEmpty() || attempt % (failover.size() + 1) == 0) {
            return new String[] {settings.host(), Integer.toString(settings.port())};
        }
        String l = failover.get(attempt % (failover.size() + 1) - 1);
        int colon = l.lastIndexOf(':');
        return new String[] {l.substring(0, colon), l.substring(colon + 1)};
    }

    /**
     * @param settings a connection's settings
     * @return whether its consumer reconnects by itself (a token credential is set, reconnects on) rather than protonj2
     */
    static boolean reconnectsItself(ConnectionSettings settings) {
        return settings.tokenCredential() != null && settings.reconnect();
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.SaslMechanism;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.ClientOptions;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer's connection: the first connect (at once, or retried with back-off in the background until it works,
 * the consumer is closed, {@code maxReconnectAttempts} is used up, or a failure retrying cannot fix happens:
 * {@link ConnectionFailures}), and protonj2's connection events afterwards (protonj2 reconnects an established
 * connection by itself).
 *
 * <p>With a token credential the connector reconnects by itself instead: protonj2's reconnects re-use the options,
 * and so the token, the connection was first opened with. A lost connection then ends every subscription's link
 * ({@link Events#lost}); each new connection gets a token of its own and attaches every subscription afresh; and a
 * connection is renewed (closed and opened again with a new token) shortly before its token expires.
 */
final class Connector {

    private static final Logger LOG = LoggerFactory.getLogger(Connector.class);

    /** What the connector reports to the consumer, on the thread where it happens. */
    interface Events {

        /**
         * Connected: the broker's identity is known; attach everything.
         *
         * @param failFast whether a subscription that cannot attach fails the start (else it is retried)
         */
        void connected(BrokerProfile profile, Connection connection, boolean failFast) throws ClientException;

        /** @param first whether this is the first report of this outage (later ones are failed reconnect attempts) */
        void interrupted(Throwable cause, boolean first);

        /** protonj2 reconnected, to this broker. */
        void reconnected(BrokerProfile profile);

        /**
         * The connection is gone and the connector opens a new one by itself (a token credential is set): every link
         * ends now; {@link #connected} attaches new ones on the new connection.
         */
        void lost(Throwable cause);

        /** After {@link #lost}: the new connection is up and attached. */
        void restored();

        /** The connection is gone for good, or the first one could not be made: the consumer has failed. */
        void failed();

        /** @return whether the consumer has failed already */
        boolean hasFailed();
    }

    private final Events events;
    private final Control control;
    private final SafeObserver observer;
    private final CurrentBroker broker;
    private final RuntimeConfig config;
    private final ConnectionSettings settings;
    /** The tokens of a token credential, or null: then protonj2 reconnects, else this connector does. */
    private final Tokens tokens;
    private volatile Client client;
    private volatile Connection connection;
    private volatile boolean connected;
    private volatile boolean established;
    private volatile boolean stopped;
    private volatile String lastError;
    private long delayMillis;
    private int attempts;

    Connector(RuntimeConfig config, Control control, SafeObserver observer, CurrentBroker broker, Events events) {
        this.events = events;
        this.control = control;
        this.observer = observer;
        this.broker = broker;
        this.config = config;
        this.settings = config.connection();
        this.delayMillis = settings.reconnectDelay().toMillis();
        this.tokens = settings.tokenCredential() == null ? null
                : new Tokens(settings.tokenCredential(), settings.tokenRefreshBefore());
        String frames = frameLoggingWarning(settings.user() != null,
                LoggerFactory.getLogger(FRAME_LOGGER).isTraceEnabled(), System.getenv("PN_TRACE_FRM"));
        if (frames != null) {
            LOG.warn("Consumer '{}': {}", config.name(), frames);
        }
    }

    /** protonj2's frame logger: at TRACE it logs the SASL init frame, with a PLAIN password or a token in it. */
    static final String FRAME_LOGGER = "org.apache.qpid.protonj2.engine.impl.ProtonFrameLoggingHandler";

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
        return "AMQP frame logging is on (" + (printed ? "PN_TRACE_FRM prints frames to standard output" : FRAME_LOGGER
                + " at TRACE") + "): the SASL frames it logs carry the password or token in clear; turn it off "
                + "outside a test system";
    }

    /** @return whether this connector reconnects by itself (a token credential is set) rather than protonj2 */
    boolean reconnectsItself() {
        return reconnectsItself(settings);
    }

    /**
     * @param settings a connection's settings
     * @return whether its consumer reconnects by itself (a token credential is set, reconnects on) rather than protonj2
     */
    static boolean reconnectsItself(ConnectionSettings settings) {
        return settings.tokenCredential() != null && settings.reconnect();
    }

    boolean connected() {
        return connected;
    }

    String lastError() {
        return lastError;
    }

    /** Tries the first connection on the control thread, and again with back-off until it works. */
    void startInBackground() {
        control.execute(this::attempt);
    }

    private void attempt() {
        if (stopped) {
            return;
        }
        Exception failure;
        String[] location = location();
        try {
            connect(false);
            attempts = 0;
            delayMillis = settings.reconnectDelay().toMillis();
            return;
        } catch (ClientException | ExecutionException | TimeoutException | RuntimeException e) {
            failure = e;
            lastError = "connection: " + ConnectionFailures.describe(e, settings);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        closeQuietly();
        if (stopped) {
            return;
        }
        attempts++;
        int max = settings.maxReconnectAttempts();
        if (ConnectionFailures.permanent(failure, settings) != null || (max != -1 && attempts > max)) {
            LOG.error("Consumer '{}' gives up connecting to {}:{} after {} attempt(s): {}", config.name(),
                    location[0], location[1], attempts, lastError);
            events.failed();
            return;
        }
        LOG.warn("Consumer '{}' cannot connect to {}:{} ({}); next try in {} ms", config.name(), location[0],
                location[1], lastError, delayMillis);
        control.later(this::attempt, Duration.ofMillis(delayMillis));
        delayMillis = Math.min(delayMillis * 2, settings.maxReconnectDelay().toMillis());
    }

    /**
     * @return the host and port the next attempt goes to: the first location, or, when this connector reconnects by
     *     itself, each of the failover locations in turn
     */
    private String[] location() {
        List<String> failover = settings.failoverLocations();
        if (!reconnectsItself() || failover.isEmpty() || attempts % (failover.size() + 1) == 0) {
            return new String[] {settings.host(), Integer.toString(settings.port())};
        }
        String l = failover.get(attempts % (failover.size() + 1) - 1);
        int colon = l.lastIndexOf(':');
        return new String[] {l.substring(0, colon), l.substring(colon + 1)};
    }

    /**
     * Connects, learns the broker's identity, and attaches every subscription.
     *
     * @param failFast whether a subscription that cannot attach fails the start (else it is retried)
     */
    void connect(boolean failFast) throws ClientException, ExecutionException, TimeoutException,
            InterruptedException {
        if (stopped) {
            return;
        }
        TlsStores.check(settings);
        Tokens.Fetched token = tokens == null ? null : tokens.forConnection();
        String[] location = location();
        Client c = Client.create(new ClientOptions().id(config.name()));
        client = c;
        Connection opened = c.connect(location[0], Integer.parseInt(location[1]), options(token));
        connection = opened;
        opened.openFuture().get(settings.openTimeout().toMillis(), TimeUnit.MILLISECONDS);
        if (stopped) {
            closeQuietly();
            return;
        }
        boolean again = established;
        connected = true;
        established = true;
        events.connected(BrokerProfile.of(opened.properties()), opened, failFast);
        if (again) {
            LOG.info("Consumer '{}' reconnected", config.name());
            events.restored();
        }
        if (token != null) {
            scheduleRenewal(opened, tokens.renewAt(token));
        }
    }

    // ------------------------------------------------------------------ a token credential: own reconnects

    /** Renews the connection with a new token shortly before its token expires. */
    private void scheduleRenewal(Connection of, Instant at) {
        if (at == null) {
            return;
        }
        Duration in = Duration.between(Instant.now(), at);
        control.later(() -> renew(of, at), in.isNegative() ? Duration.ZERO : in);
    }

    private void renew(Connection of, Instant due) {
        if (stopped || of != connection || !connected) {
            return; // closed, or replaced meanwhile (a reconnect fetched a new token anyway)
        }
        try {
            tokens.fetchAhead();
        } catch (ClientException e) {
            Duration retry = Duration.ofSeconds(5);
            LOG.warn("Consumer '{}' cannot renew its connection's token ({}); trying again in {} s", config.name(),
                    Errors.describe(e), retry.toSeconds());
            control.later(() -> renew(of, due), retry);
            return;
        }
        LOG.info("Consumer '{}' renews its connection: its token expires soon", config.name());
        replace(of, new ClientException("the connection's token expires soon: renewed with a new one"));
    }

    /**
     * The connection {@code of} is gone, or is to be renewed: end every link, close it, and connect again (a new token,
     * every subscription attached afresh). Runs on the control thread; a second report for the same connection, or one
     * for a connection replaced already, does nothing.
     */
    private void replace(Connection of, Throwable cause) {
        if (stopped || of != connection) {
            return;
        }
        boolean planned = connected && cause instanceof ClientException && !(cause instanceof
                org.apache.qpid.protonj2.client.exceptions.ClientIOException);
        connected = false;
        if (!planned) {
            lastError = "connection: " + ConnectionFailures.describe(cause, settings);
            LOG.warn("Consumer '{}' lost its connection ({}); reconnecting with a new token. Deliveries in hand will "
                    + "not be settled; the broker redelivers them and the store absorbs the copies", config.name(),
                    lastError);
        }
        events.lost(cause);
        closeQuietly();
        attempts = 0;
        delayMillis = settings.reconnectDelay().toMillis();
        control.execute(this::attempt);
    }

    private ConnectionOptions options(Tokens.Fetched token) {
        ConnectionOptions o = new ConnectionOptions();
        o.openTimeout(settings.openTimeout().toMillis());
        o.requestTimeout(settings.requestTimeout().toMillis());
        o.drainTimeout(settings.requestTimeout().toMillis());
        o.closeTimeout(settings.requestTimeout().toMillis());
        o.idleTimeout(settings.idleTimeout().toMillis());
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
        // with a token credential this connector reconnects by itself (a new token per connection)
        o.reconnectEnabled(settings.reconnect() && tokens == null);
        if (settings.reconnect() && tokens == null) {
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
        // A connection that never opened is neither interrupted nor lost: the first-connect loop retries it.
        o.interruptedHandler((c, e) -> {
            if (c == connection && established) {
                onInterrupted(e.failureCause());
            }
        });
        o.reconnectedHandler((c, e) -> onReconnected(c));
        o.disconnectedHandler((c, e) -> {
            if (c == connection && established) {
                if (reconnectsItself()) {
                    control.execute(() -> replace(c, e.failureCause()));
                } else {
                    failed(e.failureCause());
                }
            }
        });
        return o;
    }

    private void onInterrupted(Throwable cause) {
        // protonj2 calls this again for every failed reconnect attempt; report the outage once.
        boolean first = connected;
        connected = false;
        lastError = "connection: " + (cause == null ? "interrupted" : Errors.describe(cause));
        if (first) {
            LOG.warn("Consumer '{}' lost its connection ({}); reconnecting. Deliveries in hand will not be settled; "
                    + "the broker redelivers them and the store absorbs the copies", config.name(), lastError);
        } else {
            LOG.debug("Consumer '{}': reconnect attempt failed ({})", config.name(), lastError);
        }
        events.interrupted(cause, first);
    }

    private void onReconnected(org.apache.qpid.protonj2.client.Connection c) {
        connected = true; // lastError keeps the outage's cause: health reports the last error seen
        LOG.info("Consumer '{}' reconnected", config.name());
        BrokerProfile profile;
        try {
            profile = BrokerProfile.of(c.properties());
        } catch (ClientException e) {
            profile = broker.profile();
        }
        events.reconnected(profile);
    }

    /**
     * The connection is gone: for good, or, when this connector reconnects by itself, until it has opened a new one.
     * Called by protonj2's disconnected event and by a receive that found the connection gone.
     */
    void failed(Throwable cause) {
        if (stopped) {
            return;
        }
        if (reconnectsItself()) {
            Connection of = connection;
            control.execute(() -> replace(of, cause));
            return;
        }
        boolean wasConnected = connected;
        connected = false;
        lastError = "connection: " + (cause == null ? "closed" : Errors.describe(cause));
        if (!events.hasFailed()) {
            LOG.error("Consumer '{}' lost its connection for good ({}); it must be restarted", config.name(),
                    lastError);
            events.failed();
            if (wasConnected) {
                observer.connectionInterrupted(true);
            }
        }
    }

    /**
     * @param cause a connection failure
     * @return why retrying cannot help (credentials, TLS, a key or trust store), in words; null if it may
     */
    String permanent(Throwable cause) {
        return ConnectionFailures.permanent(cause, settings);
    }

    void stopRetrying() {
        stopped = true;
    }

    void close() {
        stopped = true;
        connected = false;
        closeQuietly();
    }

    private void closeQuietly() {
        Connection c = connection;
        connection = null;
        if (c != null) {
            try {
                c.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing the connection failed: {}", Errors.describe(e));
            }
        }
        Client cl = client;
        client = null;
        if (cl != null) {
            try {
                cl.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing the client failed: {}", Errors.describe(e));
            }
        }
    }
}

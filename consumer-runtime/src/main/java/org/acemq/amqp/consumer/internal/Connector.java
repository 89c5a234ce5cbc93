package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.ClientOptions;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionSecurityException;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer's connection: the first connect (at once, or retried with back-off in the background until it works,
 * the consumer is closed, {@code maxReconnectAttempts} is used up, or the broker refuses the credentials), and
 * protonj2's connection events afterwards (protonj2 reconnects an established connection by itself).
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
        try {
            connect(false);
            return;
        } catch (ClientException | ExecutionException | TimeoutException | RuntimeException e) {
            failure = e;
            lastError = "connection: " + Errors.describe(e);
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
        if (permanent(failure) || (max != -1 && attempts > max)) {
            LOG.error("Consumer '{}' gives up connecting to {}:{} after {} attempt(s): {}", config.name(),
                    settings.host(), settings.port(), attempts, lastError);
            events.failed();
            return;
        }
        LOG.warn("Consumer '{}' cannot connect to {}:{} ({}); next try in {} ms", config.name(), settings.host(),
                settings.port(), lastError, delayMillis);
        control.later(this::attempt, Duration.ofMillis(delayMillis));
        delayMillis = Math.min(delayMillis * 2, settings.maxReconnectDelay().toMillis());
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
        Client c = Client.create(new ClientOptions().id(config.name()));
        client = c;
        Connection opened = c.connect(settings.host(), settings.port(), options());
        connection = opened;
        opened.openFuture().get(settings.openTimeout().toMillis(), TimeUnit.MILLISECONDS);
        if (stopped) {
            closeQuietly();
            return;
        }
        connected = true;
        established = true;
        events.connected(BrokerProfile.of(opened.properties()), opened, failFast);
    }

    private ConnectionOptions options() {
        ConnectionOptions o = new ConnectionOptions();
        o.openTimeout(settings.openTimeout().toMillis());
        o.requestTimeout(settings.requestTimeout().toMillis());
        o.drainTimeout(settings.requestTimeout().toMillis());
        o.closeTimeout(settings.requestTimeout().toMillis());
        o.idleTimeout(settings.idleTimeout().toMillis());
        o.maxFrameSize(settings.maxFrameSize());
        if (settings.user() != null) {
            o.user(settings.user());
            o.password(settings.password());
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
            }
            if (settings.keyStorePath() != null) {
                o.sslOptions().keyStoreLocation(settings.keyStorePath());
                o.sslOptions().keyStorePassword(settings.keyStorePassword());
            }
        }
        o.reconnectEnabled(settings.reconnect());
        if (settings.reconnect()) {
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
                failed(e.failureCause());
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

    /** The connection is gone for good. */
    void failed(Throwable cause) {
        if (stopped) {
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

    /** @param cause a connection failure @return whether retrying cannot help (credentials, TLS) */
    static boolean permanent(Throwable cause) {
        return Errors.unwrap(cause) instanceof ClientConnectionSecurityException;
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

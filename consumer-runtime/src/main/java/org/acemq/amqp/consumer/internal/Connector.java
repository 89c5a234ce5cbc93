package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
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
 * ({@link ConnectorEvents#lost}); each new connection gets a token of its own and attaches every subscription afresh; and a
 * connection is renewed (closed and opened again with a new token) shortly before its token expires.
 */
final class Connector {

    private static final Logger LOG = LoggerFactory.getLogger(Connector.class);

    private final ConnectorEvents events;
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

    Connector(RuntimeConfig config, Control control, SafeObserver observer, CurrentBroker broker, ConnectorEvents events) {
        this.events = events;
        this.control = control;
        this.observer = observer;
        this.broker = broker;
        this.config = config;
        this.settings = config.connection();
        this.delayMillis = settings.reconnectDelay().toMillis();
        this.tokens = settings.tokenCredential() == null ? null
                : new Tokens(settings.tokenCredential(), settings.tokenRefreshBefore(), control, config.name());
        String frames = AmqpOptions.frameLoggingWarning(settings.user() != null,
                LoggerFactory.getLogger(ProtonInternals.FRAME_LOGGER).isTraceEnabled(), System.getenv("PN_TRACE_FRM"));
        if (frames != null) {
            LOG.warn("Consumer '{}': {}", config.name(), frames);
        }
    }


    /** @return whether this connector reconnects by itself (a token credential is set) rather than protonj2 */
    boolean reconnectsItself() {
        return AmqpOptions.reconnectsItself(settings);
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
        String[] location = AmqpOptions.location(settings, attempts);
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
        String[] location = AmqpOptions.location(settings, attempts);
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
            tokens.scheduleRenewal(token, () -> !stopped && opened == connection && connected, () -> replace(opened,
                    new ClientException("the connection's token expires soon: renewed with a new one")));
        }
    }

    // ------------------------------------------------------------------ a token credential: own reconnects

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
        ConnectionOptions o = AmqpOptions.of(settings, token);
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
     * The connection is gone for good: protonj2 gave up, or a receive found it gone. (When this connector reconnects by
     * itself, protonj2's disconnected event goes to {@link #replace} instead, and receives do not report.)
     */
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

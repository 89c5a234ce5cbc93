package org.acemq.amqp.consumer.internal;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.SessionOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The session of one subscription, or of a session group: opened when first needed, and replaced by a new one when
 * the broker ends it (a session the broker ended is never re-used: every attach on it would fail).
 */
final class SessionHandle {

    private static final Logger LOG = LoggerFactory.getLogger(SessionHandle.class);

    private final String name;
    private final ConnectionSettings settings;
    private Connection connection;
    private Session session;

    SessionHandle(String name, ConnectionSettings settings) {
        this.name = name;
        this.settings = settings;
    }

    /** The connection sessions are opened on (a new one after a fresh start). */
    synchronized void connection(Connection connection) {
        this.connection = connection;
        this.session = null;
    }

    /**
     * @return the live session, opened now if there is none
     * @throws ClientException if it cannot be opened
     */
    synchronized Session session() throws ClientException {
        if (session != null) {
            return session;
        }
        if (connection == null) {
            throw new ClientException("not connected");
        }
        SessionOptions options = new SessionOptions();
        options.openTimeout(settings.openTimeout().toMillis());
        options.requestTimeout(settings.requestTimeout().toMillis());
        options.drainTimeout(settings.requestTimeout().toMillis());
        Session s = connection.openSession(options);
        try {
            s.openFuture().get(settings.openTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            s.closeAsync();
            throw new ClientException("interrupted while opening a session", e);
        } catch (ExecutionException | TimeoutException e) {
            s.closeAsync();
            throw Errors.clientException(e);
        }
        session = s;
        return s;
    }

    /** The broker ended {@code dead}: the next {@link #session()} opens a new one. */
    synchronized void ended(Session dead) {
        if (dead != null && dead == session) {
            session = null;
            LOG.info("Session '{}' was ended by the broker; a new one is opened for its links", name);
            dead.closeAsync();
        }
    }

    synchronized void close() {
        if (session != null) {
            try {
                session.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing session '{}' failed: {}", name, Errors.describe(e));
            }
            session = null;
        }
    }
}

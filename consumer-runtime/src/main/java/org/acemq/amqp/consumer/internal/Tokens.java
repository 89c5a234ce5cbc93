package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;
import org.acemq.amqp.consumer.AccessToken;
import org.acemq.amqp.consumer.TokenCredential;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bearer tokens of one consumer's connections: one fetched from the {@link TokenCredential} for every connection,
 * and the renewal of a connection shortly before its token expires (a new token fetched first, then the connection
 * replaced). Used on the control thread only.
 */
final class Tokens {

    private static final Logger LOG = LoggerFactory.getLogger(Tokens.class);
    /** How long after a failed fetch a renewal tries again. */
    private static final Duration RETRY = Duration.ofSeconds(5);

    private final TokenCredential credential;
    private final Duration refreshBefore;
    private final Control control;
    private final String consumer;
    /** Fetched ahead, by a renewal, for the next connection; null otherwise. */
    private AccessToken ahead;
    private Instant aheadFetched;

    Tokens(TokenCredential credential, Duration refreshBefore, Control control, String consumer) {
        this.credential = credential;
        this.refreshBefore = refreshBefore;
        this.control = control;
        this.consumer = consumer;
    }

    /** A token for a new connection, and when it was fetched. */
    record Fetched(AccessToken token, Instant at) {
    }

    /**
     * @return a token for the connection about to be opened: the one fetched ahead by a renewal if there is one, else
     *     a new one from the credential
     * @throws ClientException if the credential fails or returns nothing or an expired token (a transient failure:
     *     the attempt is retried)
     */
    Fetched forConnection() throws ClientException {
        if (ahead != null) {
            Fetched f = new Fetched(ahead, aheadFetched);
            ahead = null;
            return f;
        }
        return fetch();
    }

    /** Fetches a token now, to be used by the next connection. */
    void fetchAhead() throws ClientException {
        Fetched f = fetch();
        ahead = f.token();
        aheadFetched = f.at();
    }

    private Fetched fetch() throws ClientException {
        AccessToken token;
        Instant now = Instant.now();
        try {
            token = credential.token();
        } catch (Exception e) {
            throw new ClientException("the token credential failed: " + Errors.describe(e), e);
        }
        if (token == null) {
            throw new ClientException("the token credential returned no token");
        }
        if (token.expiresAt().map(at -> !at.isAfter(now)).orElse(false)) {
            throw new ClientException("the token credential returned a token that expired at "
                    + token.expiresAt().get());
        }
        return new Fetched(token, now);
    }

    /**
     * @param f the token of a connection
     * @return when that connection is renewed: {@code refreshBefore} before the token expires, but not before half of
     *     its remaining life when fetched had passed; null if the token does not expire
     */
    Instant renewAt(Fetched f) {
        if (f.token().expiresAt().isEmpty()) {
            return null;
        }
        Instant expires = f.token().expiresAt().get();
        Instant half = f.at().plus(Duration.between(f.at(), expires).dividedBy(2));
        Instant early = expires.minus(refreshBefore);
        return early.isAfter(half) ? early : half;
    }

    /**
     * Renews a connection at {@link #renewAt}: fetches the next connection's token, then runs {@code replace}. A fetch
     * that fails is tried again every 5 s while the connection is current (the broker may close it when its token
     * expires; the next connection then fetches its own).
     *
     * @param token the connection's token
     * @param current whether the connection is still the consumer's, and open
     * @param replace closes the connection and opens the next
     */
    void scheduleRenewal(Fetched token, BooleanSupplier current, Runnable replace) {
        Instant at = renewAt(token);
        if (at != null) {
            Duration in = Duration.between(Instant.now(), at);
            control.later(() -> renew(current, replace), in.isNegative() ? Duration.ZERO : in);
        }
    }

    private void renew(BooleanSupplier current, Runnable replace) {
        if (!current.getAsBoolean()) {
            return; // closed, or replaced meanwhile (a reconnect fetched a new token anyway)
        }
        try {
            fetchAhead();
        } catch (ClientException e) {
            LOG.warn("Consumer '{}' cannot renew its connection's token ({}); trying again in {} s", consumer,
                    Errors.describe(e), RETRY.toSeconds());
            control.later(() -> renew(current, replace), RETRY);
            return;
        }
        LOG.info("Consumer '{}' renews its connection: its token expires soon", consumer);
        replace.run();
    }
}

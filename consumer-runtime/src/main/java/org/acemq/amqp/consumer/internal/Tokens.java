package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.time.Instant;
import org.acemq.amqp.consumer.AccessToken;
import org.acemq.amqp.consumer.TokenCredential;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * The bearer tokens of one consumer's connections: one fetched from the {@link TokenCredential} for every connection,
 * and when that connection must be renewed so that it never outlives its token. Used on the control thread only.
 */
final class Tokens {

    private final TokenCredential credential;
    private final Duration refreshBefore;
    /** Fetched ahead, by a renewal, for the next connection; null otherwise. */
    private AccessToken ahead;
    private Instant aheadFetched;

    Tokens(TokenCredential credential, Duration refreshBefore) {
        this.credential = credential;
        this.refreshBefore = refreshBefore;
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
}

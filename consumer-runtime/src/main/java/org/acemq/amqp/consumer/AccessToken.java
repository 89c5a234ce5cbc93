package org.acemq.amqp.consumer;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A bearer token (an OAuth 2 access token, a JWT) and when it expires, as a {@link TokenCredential} hands it out.
 * Immutable. Its value is never part of {@link #toString()}, a log line or an exception message.
 */
public final class AccessToken {

    private final String value;
    private final Instant expiresAt;

    private AccessToken(String value, Instant expiresAt) {
        this.value = Validation.notBlank("token value", value);
        this.expiresAt = expiresAt;
    }

    /**
     * @param value the token as the broker expects it (for a JWT, its compact form)
     * @param expiresAt when it expires (for a JWT, its {@code exp} claim)
     * @return the token
     */
    public static AccessToken of(String value, Instant expiresAt) {
        return new AccessToken(value, Objects.requireNonNull(expiresAt, "expiresAt must not be null"));
    }

    /**
     * @param value the token as the broker expects it
     * @return a token that does not expire (the consumer never renews its connection for it)
     */
    public static AccessToken withoutExpiry(String value) {
        return new AccessToken(value, null);
    }

    /** @return the token; never logged */
    public String value() {
        return value;
    }

    /** @return when it expires, or empty if it does not */
    public Optional<Instant> expiresAt() {
        return Optional.ofNullable(expiresAt);
    }

    /** @return the expiry, never the value */
    @Override
    public String toString() {
        return "AccessToken[value=<hidden>, expiresAt=" + (expiresAt == null ? "never" : expiresAt) + "]";
    }
}

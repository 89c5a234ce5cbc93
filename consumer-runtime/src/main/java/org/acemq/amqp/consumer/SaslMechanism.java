package org.acemq.amqp.consumer;

/**
 * A SASL mechanism the consumer may use to authenticate ({@link ConnectionSettings.Builder#saslMechanisms}).
 *
 * <p>The broker lists the mechanisms it offers, in its order of preference; the client takes the first of those that
 * is allowed and whose credentials are configured. Without a choice, every mechanism below (and CRAM-MD5 and
 * SCRAM-SHA-1, which the client also knows) is allowed, so that a broker listing {@code EXTERNAL} first gets
 * {@code EXTERNAL} from a client with a key store even when a user and password are set: name the mechanism to avoid
 * that.
 */
public enum SaslMechanism {

    /** User name and password in the clear (protect it with TLS); also a bearer token as the password. */
    PLAIN("PLAIN"),
    /** The identity of the TLS client certificate (a key store or an SSL context with a key). */
    EXTERNAL("EXTERNAL"),
    /** Salted challenge-response with SHA-256: the password never crosses the wire. */
    SCRAM_SHA_256("SCRAM-SHA-256"),
    /** Salted challenge-response with SHA-512: the password never crosses the wire. */
    SCRAM_SHA_512("SCRAM-SHA-512"),
    /** An OAuth 2 bearer token ({@link ConnectionSettings.Builder#tokenCredential}) with the user name. */
    XOAUTH2("XOAUTH2"),
    /** No credentials. */
    ANONYMOUS("ANONYMOUS");

    private final String mechanismName;

    SaslMechanism(String mechanismName) {
        this.mechanismName = mechanismName;
    }

    /** @return the mechanism's name on the wire, e.g. {@code SCRAM-SHA-256} */
    public String mechanismName() {
        return mechanismName;
    }
}

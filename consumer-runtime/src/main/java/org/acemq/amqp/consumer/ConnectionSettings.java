package org.acemq.amqp.consumer;

import java.security.KeyStore;
import java.security.KeyStoreException;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * Where and how to connect to the broker. Immutable; build with {@link #builder(String, int)}.
 *
 * <p>Credentials are never included in {@link #toString()}, log lines, exception messages or metrics.
 *
 * <p><b>Security.</b> With TLS on, the broker's certificate is checked against the trust store (or the JVM's default
 * trust, or the SSL context's), its host name against the certificate ({@link Builder#verifyHost}, on by default), and a
 * client certificate is presented from the key store when the broker asks for one. There is no fall-back to plain TCP.
 * Authentication is SASL: a user and password ({@link Builder#credentials}), a bearer token from a
 * {@link TokenCredential} ({@link Builder#tokenCredential}), the client certificate ({@code EXTERNAL}) or none
 * ({@code ANONYMOUS}); {@link Builder#saslMechanisms} restricts which. A connection the broker refuses for its
 * certificate or credentials, or that a bad key or trust store makes impossible, is not retried: the consumer fails at
 * once with the reason ({@link ConsumerHealth#lastError()}).
 */
public final class ConnectionSettings {

    /** Reconnect after a lost connection: on by default. */
    public static final boolean DEFAULT_RECONNECT = true;
    /** First delay before reconnecting: 100 ms. */
    public static final Duration DEFAULT_RECONNECT_DELAY = Duration.ofMillis(100);
    /** Longest delay between reconnect attempts (exponential back-off): 30 s. */
    public static final Duration DEFAULT_MAX_RECONNECT_DELAY = Duration.ofSeconds(30);
    /** Reconnect attempts before giving up; -1 means forever (the default). */
    public static final int DEFAULT_MAX_RECONNECT_ATTEMPTS = -1;
    /** AMQP idle timeout advertised to the broker: 60 s. */
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
    /** How long opening the connection, a session or a link may take: 15 s. */
    public static final Duration DEFAULT_OPEN_TIMEOUT = Duration.ofSeconds(15);
    /**
     * How long a request the runtime waits on may take (transaction declare/discharge, drain, credit): 30 s.
     * protonj2's own default is to wait forever.
     */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(30);
    /** Key and trust store type when none is set: {@code PKCS12} (which loads JKS files as well while the JDK's
     * {@code keystore.type.compat} security property is {@code true}, its default). */
    public static final String DEFAULT_STORE_TYPE = "PKCS12";
    /** How long before a token expires the consumer renews its connection with a new one: 1 minute. */
    public static final Duration DEFAULT_TOKEN_REFRESH_BEFORE = Duration.ofMinutes(1);
    /** The largest AMQP frame the consumer accepts from the broker (open.max-frame-size): 64 KiB, protonj2's default. */
    public static final int DEFAULT_MAX_FRAME_SIZE = 65536;
    /** The smallest max-frame-size AMQP allows: 512 bytes. */
    public static final int MIN_MAX_FRAME_SIZE = 512;
    /** The largest max-frame-size accepted here: 16 MiB (well below the session window of 100 MiB it must fit). */
    public static final int MAX_MAX_FRAME_SIZE = 16 * 1024 * 1024;

    private final String host;
    private final int port;
    private final String user;
    private final String password;
    private final String virtualHost;
    private final boolean tls;
    private final String trustStorePath;
    private final String trustStorePassword;
    private final String keyStorePath;
    private final String keyStorePassword;
    private final boolean verifyHost;
    private final SSLContext sslContext;
    private final String trustStoreType;
    private final String keyStoreType;
    private final String keyAlias;
    private final List<String> enabledProtocols;
    private final List<String> enabledCipherSuites;
    private final Set<SaslMechanism> saslMechanisms;
    private final TokenCredential tokenCredential;
    private final Duration tokenRefreshBefore;
    private final boolean reconnect;
    private final Duration reconnectDelay;
    private final Duration maxReconnectDelay;
    private final int maxReconnectAttempts;
    private final List<String> failoverHosts;
    private final List<Integer> failoverPorts;
    private final Duration idleTimeout;
    private final Duration openTimeout;
    private final Duration requestTimeout;
    private final int maxFrameSize;

    private ConnectionSettings(Builder b) {
        this.host = b.host;
        this.port = b.port;
        this.user = b.user;
        this.password = b.password;
        this.virtualHost = b.virtualHost;
        this.tls = b.tls;
        this.trustStorePath = b.trustStorePath;
        this.trustStorePassword = b.trustStorePassword;
        this.keyStorePath = b.keyStorePath;
        this.keyStorePassword = b.keyStorePassword;
        this.verifyHost = b.verifyHost;
        this.sslContext = b.sslContext;
        this.trustStoreType = b.trustStoreType;
        this.keyStoreType = b.keyStoreType;
        this.keyAlias = b.keyAlias;
        this.enabledProtocols = List.copyOf(b.enabledProtocols);
        this.enabledCipherSuites = List.copyOf(b.enabledCipherSuites);
        this.saslMechanisms = b.saslMechanisms.isEmpty() ? Set.of()
                : Collections.unmodifiableSet(EnumSet.copyOf(b.saslMechanisms));
        this.tokenCredential = b.tokenCredential;
        this.tokenRefreshBefore = b.tokenRefreshBefore;
        this.reconnect = b.reconnect;
        this.reconnectDelay = b.reconnectDelay;
        this.maxReconnectDelay = b.maxReconnectDelay;
        this.maxReconnectAttempts = b.maxReconnectAttempts;
        this.failoverHosts = List.copyOf(b.failoverHosts);
        this.failoverPorts = List.copyOf(b.failoverPorts);
        this.idleTimeout = b.idleTimeout;
        this.openTimeout = b.openTimeout;
        this.requestTimeout = b.requestTimeout;
        this.maxFrameSize = b.maxFrameSize;
    }

    /**
     * @param host the broker host name or address
     * @param port the broker's AMQP port (1-65535)
     * @return a builder with every other setting at its default
     */
    public static Builder builder(String host, int port) {
        return new Builder(host, port);
    }

    /** @return the broker host */
    public String host() {
        return host;
    }

    /** @return the broker port */
    public int port() {
        return port;
    }

    /** @return the SASL user name (of the password or of the token credential), or null for anonymous */
    public String user() {
        return user;
    }

    /** @return the SASL password, or null; never logged */
    public String password() {
        return password;
    }

    /** @return the AMQP virtual host (open.hostname), or null for the default */
    public String virtualHost() {
        return virtualHost;
    }

    /** @return whether TLS is used */
    public boolean tls() {
        return tls;
    }

    /** @return the trust store path, or null */
    public String trustStorePath() {
        return trustStorePath;
    }

    /** @return the trust store password, or null; never logged */
    public String trustStorePassword() {
        return trustStorePassword;
    }

    /** @return the key store path (client certificate), or null */
    public String keyStorePath() {
        return keyStorePath;
    }

    /** @return the key store password, or null; never logged */
    public String keyStorePassword() {
        return keyStorePassword;
    }

    /** @return whether the TLS host name is verified (default true) */
    public boolean verifyHost() {
        return verifyHost;
    }

    /** @return a preconfigured SSL context that overrides the stores, or null */
    public SSLContext sslContext() {
        return sslContext;
    }

    /** @return the trust store's type (default {@value #DEFAULT_STORE_TYPE}) */
    public String trustStoreType() {
        return trustStoreType;
    }

    /** @return the key store's type (default {@value #DEFAULT_STORE_TYPE}) */
    public String keyStoreType() {
        return keyStoreType;
    }

    /** @return the alias of the key store entry presented as the client certificate, or null for the key manager's
     *     choice */
    public String keyAlias() {
        return keyAlias;
    }

    /** @return the TLS protocols the consumer may negotiate; empty for the JVM's defaults */
    public List<String> enabledProtocols() {
        return enabledProtocols;
    }

    /** @return the TLS cipher suites the consumer may negotiate; empty for the JVM's defaults */
    public List<String> enabledCipherSuites() {
        return enabledCipherSuites;
    }

    /**
     * @return the SASL mechanisms the consumer may use; empty for any the broker offers whose credentials are
     *     configured (with a token credential: {@code XOAUTH2} and {@code PLAIN})
     */
    public Set<SaslMechanism> saslMechanisms() {
        return saslMechanisms;
    }

    /** @return where the bearer tokens come from, or null when no token credential is set */
    public TokenCredential tokenCredential() {
        return tokenCredential;
    }

    /** @return how long before the token in use expires the connection is renewed with a new token */
    public Duration tokenRefreshBefore() {
        return tokenRefreshBefore;
    }

    /** @return whether to reconnect after a lost connection */
    public boolean reconnect() {
        return reconnect;
    }

    /** @return the first reconnect delay */
    public Duration reconnectDelay() {
        return reconnectDelay;
    }

    /** @return the longest reconnect delay */
    public Duration maxReconnectDelay() {
        return maxReconnectDelay;
    }

    /** @return how many reconnect attempts before giving up, -1 for no limit */
    public int maxReconnectAttempts() {
        return maxReconnectAttempts;
    }

    /** @return further {@code host:port} locations tried in order when reconnecting */
    public List<String> failoverLocations() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < failoverHosts.size(); i++) {
            out.add(failoverHosts.get(i) + ":" + failoverPorts.get(i));
        }
        return out;
    }

    /** @return the AMQP idle timeout */
    public Duration idleTimeout() {
        return idleTimeout;
    }

    /** @return the open timeout */
    public Duration openTimeout() {
        return openTimeout;
    }

    /** @return the request timeout */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    /** @return the largest frame the consumer accepts from the broker, in bytes (default 64 KiB) */
    public int maxFrameSize() {
        return maxFrameSize;
    }

    /** @return the settings without any credential */
    @Override
    public String toString() {
        return "ConnectionSettings[" + (tls ? "amqps://" : "amqp://") + host + ":" + port
                + (user != null ? ", user=<set>" : "") + (password != null ? ", password=<hidden>" : "")
                + (tokenCredential != null ? ", token=<credential>" : "")
                + (saslMechanisms.isEmpty() ? "" : ", sasl=" + saslMechanisms)
                + (tls ? ", verifyHost=" + verifyHost : "")
                + ", reconnect=" + reconnect + "]";
    }

    /** Builds {@link ConnectionSettings}; every setter validates its argument at once. */
    public static final class Builder {
        private final String host;
        private final int port;
        private String user;
        private String password;
        private String virtualHost;
        private boolean tls;
        private String trustStorePath;
        private String trustStorePassword;
        private String keyStorePath;
        private String keyStorePassword;
        private boolean verifyHost = true;
        private SSLContext sslContext;
        private String trustStoreType = DEFAULT_STORE_TYPE;
        private String keyStoreType = DEFAULT_STORE_TYPE;
        private boolean trustStoreTypeSet;
        private boolean keyStoreTypeSet;
        private String keyAlias;
        private List<String> enabledProtocols = List.of();
        private List<String> enabledCipherSuites = List.of();
        private Set<SaslMechanism> saslMechanisms = EnumSet.noneOf(SaslMechanism.class);
        private TokenCredential tokenCredential;
        private Duration tokenRefreshBefore = DEFAULT_TOKEN_REFRESH_BEFORE;
        private boolean reconnect = DEFAULT_RECONNECT;
        private Duration reconnectDelay = DEFAULT_RECONNECT_DELAY;
        private Duration maxReconnectDelay = DEFAULT_MAX_RECONNECT_DELAY;
        private int maxReconnectAttempts = DEFAULT_MAX_RECONNECT_ATTEMPTS;
        private final List<String> failoverHosts = new ArrayList<>();
        private final List<Integer> failoverPorts = new ArrayList<>();
        private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
        private Duration openTimeout = DEFAULT_OPEN_TIMEOUT;
        private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
        private int maxFrameSize = DEFAULT_MAX_FRAME_SIZE;

        private Builder(String host, int port) {
            this.host = Validation.notBlank("host", host);
            this.port = Validation.port("port", port);
        }

        /**
         * Authenticates with SASL PLAIN (or another mechanism the broker offers that fits).
         *
         * @param user the user name
         * @param password the password; never logged
         * @return this builder
         */
        public Builder credentials(String user, String password) {
            this.user = Validation.notBlank("user", user);
            this.password = Objects.requireNonNull(password, "password must not be null");
            return this;
        }

        /**
         * Authenticates with bearer tokens (OAuth 2 access tokens) instead of a password: {@code XOAUTH2}, or the
         * token as the {@code PLAIN} password (what RabbitMQ's OAuth 2 plugin expects), whichever the broker offers
         * first unless {@link #saslMechanisms} narrows it. A token is asked of {@code credential} for every connection
         * (the first, each reconnect, and a renewal {@link #tokenRefreshBefore} before the token in use expires, since
         * brokers such as RabbitMQ close a connection whose token expired). The consumer then reconnects by itself
         * rather than through the AMQP client, whose reconnects would re-use the first token. Not together with
         * {@link #credentials}.
         *
         * @param user the user name sent with the token (RabbitMQ ignores it but the mechanisms need one)
         * @param credential where tokens come from; see {@link TokenCredential} for when it is called
         * @return this builder
         */
        public Builder tokenCredential(String user, TokenCredential credential) {
            this.user = Validation.notBlank("user", user);
            this.tokenCredential = Objects.requireNonNull(credential, "tokenCredential must not be null");
            return this;
        }

        /**
         * @param before how long before the token in use expires the consumer renews its connection with a new token
         *     (default 1 minute); never earlier than half-way through the token's remaining life when it was fetched
         * @return this builder
         */
        public Builder tokenRefreshBefore(Duration before) {
            this.tokenRefreshBefore = Validation.positive("tokenRefreshBefore", before);
            return this;
        }

        /**
         * Restricts the SASL mechanisms the consumer may use. Of the broker's offer the first allowed one whose
         * credentials are configured is taken; {@link #build()} refuses a mechanism whose credentials are missing.
         *
         * @param mechanisms the mechanisms allowed; none means any whose credentials are configured (the default)
         * @return this builder
         */
        public Builder saslMechanisms(SaslMechanism... mechanisms) {
            Objects.requireNonNull(mechanisms, "saslMechanisms must not be null");
            EnumSet<SaslMechanism> set = EnumSet.noneOf(SaslMechanism.class);
            for (SaslMechanism m : mechanisms) {
                set.add(Objects.requireNonNull(m, "saslMechanisms must not contain null"));
            }
            this.saslMechanisms = set;
            return this;
        }

        /**
         * @param virtualHost the AMQP virtual host to ask for in open.hostname
         * @return this builder
         */
        public Builder virtualHost(String virtualHost) {
            this.virtualHost = Validation.notBlank("virtualHost", virtualHost);
            return this;
        }

        /**
         * @param enabled whether to use TLS (default false)
         * @return this builder
         */
        public Builder tls(boolean enabled) {
            this.tls = enabled;
            return this;
        }

        /**
         * Enables TLS with a trust store.
         *
         * @param path trust store file
         * @param password its password; never logged
         * @return this builder
         */
        public Builder trustStore(String path, String password) {
            this.tls = true;
            this.trustStorePath = Validation.notBlank("trustStorePath", path);
            this.trustStorePassword = password;
            return this;
        }

        /**
         * Enables TLS with a client certificate.
         *
         * @param path key store file
         * @param password its password; never logged
         * @return this builder
         */
        public Builder keyStore(String path, String password) {
            this.tls = true;
            this.keyStorePath = Validation.notBlank("keyStorePath", path);
            this.keyStorePassword = password;
            return this;
        }

        /**
         * @param type the trust store's type, e.g. {@code PKCS12} or {@code JKS} (default
         *     {@value ConnectionSettings#DEFAULT_STORE_TYPE})
         * @return this builder
         */
        public Builder trustStoreType(String type) {
            this.trustStoreType = storeType("trustStoreType", type);
            this.trustStoreTypeSet = true;
            return this;
        }

        /**
         * @param type the key store's type, e.g. {@code PKCS12} or {@code JKS} (default
         *     {@value ConnectionSettings#DEFAULT_STORE_TYPE})
         * @return this builder
         */
        public Builder keyStoreType(String type) {
            this.keyStoreType = storeType("keyStoreType", type);
            this.keyStoreTypeSet = true;
            return this;
        }

        private static String storeType(String name, String type) {
            Validation.notBlank(name, type);
            try {
                KeyStore.getInstance(type);
            } catch (KeyStoreException e) {
                throw new IllegalArgumentException(name + " must be a key store type this JVM knows (PKCS12, JKS, "
                        + "...), but was '" + type + "'", e);
            }
            return type;
        }

        /**
         * @param alias the key store entry presented as the client certificate (a private key entry), when the store
         *     holds several; checked against the store when connecting
         * @return this builder
         */
        public Builder keyAlias(String alias) {
            this.keyAlias = Validation.notBlank("keyAlias", alias);
            return this;
        }

        /**
         * @param protocols the TLS protocols the consumer may negotiate, e.g. {@code TLSv1.3}; each must be one this
         *     JVM supports; none means the JVM's defaults
         * @return this builder
         */
        public Builder enabledProtocols(String... protocols) {
            this.enabledProtocols = supported("enabledProtocols", protocols, supportedTls().getProtocols());
            return this;
        }

        /**
         * @param cipherSuites the TLS cipher suites the consumer may negotiate, by their standard names; each must be
         *     one this JVM supports; none means the JVM's defaults
         * @return this builder
         */
        public Builder enabledCipherSuites(String... cipherSuites) {
            this.enabledCipherSuites = supported("enabledCipherSuites", cipherSuites,
                    supportedTls().getCipherSuites());
            return this;
        }

        private static SSLParameters supportedTls() {
            try {
                return SSLContext.getDefault().getSupportedSSLParameters();
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("this JVM has no default TLS context", e);
            }
        }

        private static List<String> supported(String name, String[] values, String[] supported) {
            Objects.requireNonNull(values, name + " must not be null");
            List<String> known = Arrays.asList(supported);
            for (String v : values) {
                if (v == null || !known.contains(v)) {
                    throw new IllegalArgumentException(name + " must each be supported by this JVM (" + known
                            + "), but one was '" + v + "'");
                }
            }
            return List.of(values);
        }

        /**
         * @param verify whether to verify the broker's host name against its certificate (default true)
         * @return this builder
         */
        public Builder verifyHost(boolean verify) {
            this.verifyHost = verify;
            return this;
        }

        /**
         * Enables TLS with a context built by the application; the stores are then ignored.
         *
         * @param context the SSL context
         * @return this builder
         */
        public Builder sslContext(SSLContext context) {
            this.tls = true;
            this.sslContext = Objects.requireNonNull(context, "sslContext must not be null");
            return this;
        }

        /**
         * @param enabled whether to reconnect after a lost connection (default true)
         * @return this builder
         */
        public Builder reconnect(boolean enabled) {
            this.reconnect = enabled;
            return this;
        }

        /**
         * The back-off between reconnect attempts, and between attempts at the first connection when the consumer
         * starts in the background (see {@link AmqpConsumer.Builder#failFastStart(boolean)}).
         *
         * @param first the first delay (default 100 ms)
         * @param max the longest delay (default 30 s); the delay doubles up to it
         * @return this builder
         */
        public Builder reconnectDelay(Duration first, Duration max) {
            Validation.positive("reconnectDelay", first);
            Validation.positive("maxReconnectDelay", max);
            if (max.compareTo(first) < 0) {
                throw new IllegalArgumentException("maxReconnectDelay must be >= reconnectDelay (" + first
                        + "), but was " + max);
            }
            this.reconnectDelay = first;
            this.maxReconnectDelay = max;
            return this;
        }

        /**
         * @param attempts how many reconnect attempts before giving up, and how many attempts at the first connection
         *     when starting in the background; -1 (the default) for no limit
         * @return this builder
         */
        public Builder maxReconnectAttempts(int attempts) {
            if (attempts < -1 || attempts == 0) {
                throw new IllegalArgumentException("maxReconnectAttempts must be -1 or >= 1, but was " + attempts);
            }
            this.maxReconnectAttempts = attempts;
            return this;
        }

        /**
         * Adds a further location tried, in order, when reconnecting.
         *
         * @param host the host
         * @param port the port
         * @return this builder
         */
        public Builder failover(String host, int port) {
            failoverHosts.add(Validation.notBlank("failover host", host));
            failoverPorts.add(Validation.port("failover port", port));
            return this;
        }

        /**
         * @param timeout the AMQP idle timeout (default 60 s); zero disables it
         * @return this builder
         */
        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = Validation.notNegative("idleTimeout", timeout);
            return this;
        }

        /**
         * @param timeout how long opening a connection, session or link may take (default 15 s)
         * @return this builder
         */
        public Builder openTimeout(Duration timeout) {
            this.openTimeout = Validation.positive("openTimeout", timeout);
            return this;
        }

        /**
         * @param timeout how long a transaction declare/discharge or a drain may take (default 30 s)
         * @return this builder
         */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = Validation.positive("requestTimeout", timeout);
            return this;
        }

        /**
         * The largest AMQP frame the consumer accepts (the max-frame-size of its open): the broker sends no frame
         * larger, so a message larger than this comes in several transfer frames (which the runtime decodes like
         * any other). Smaller frames bound how much of a large message one read holds; the broker's own limit applies
         * too (the smaller of the two wins).
         *
         * @param bytes between {@value #MIN_MAX_FRAME_SIZE} (the AMQP minimum) and 16 MiB; default 64 KiB
         * @return this builder
         */
        public Builder maxFrameSize(int bytes) {
            if (bytes < MIN_MAX_FRAME_SIZE || bytes > MAX_MAX_FRAME_SIZE) {
                throw new IllegalArgumentException("maxFrameSize must be between " + MIN_MAX_FRAME_SIZE + " and "
                        + MAX_MAX_FRAME_SIZE + " bytes, but was " + bytes);
            }
            this.maxFrameSize = bytes;
            return this;
        }

        /**
         * @return the settings
         * @throws IllegalArgumentException if settings contradict each other: a password and a token credential, a
         *     SASL mechanism whose credentials are missing, a store type or key alias without its store, TLS
         *     protocols or cipher suites without TLS
         */
        public ConnectionSettings build() {
            if (tokenCredential != null && password != null) {
                throw new IllegalArgumentException("credentials and tokenCredential are both set: authenticate with "
                        + "one of them");
            }
            for (SaslMechanism m : saslMechanisms) {
                String missing = missingFor(m);
                if (missing != null) {
                    throw new IllegalArgumentException("saslMechanisms includes " + m.mechanismName() + ", which "
                            + missing);
                }
            }
            if (trustStoreTypeSet && trustStorePath == null) {
                throw new IllegalArgumentException("trustStoreType is set, but no trustStore");
            }
            if ((keyStoreTypeSet || keyAlias != null) && keyStorePath == null) {
                throw new IllegalArgumentException((keyAlias != null ? "keyAlias" : "keyStoreType")
                        + " is set, but no keyStore");
            }
            if (!tls && (!enabledProtocols.isEmpty() || !enabledCipherSuites.isEmpty())) {
                throw new IllegalArgumentException((enabledProtocols.isEmpty() ? "enabledCipherSuites"
                        : "enabledProtocols") + " is set, but TLS is off: turn it on with tls(true), trustStore, "
                        + "keyStore or sslContext");
            }
            return new ConnectionSettings(this);
        }

        /** @return what the mechanism needs and is not configured, or null */
        private String missingFor(SaslMechanism m) {
            return switch (m) {
                case PLAIN, XOAUTH2 -> user == null ? "needs credentials(user, password) or tokenCredential(user, "
                        + "credential)" : null;
                case SCRAM_SHA_256, SCRAM_SHA_512 -> tokenCredential != null ? "cannot carry a bearer token: use "
                        + "PLAIN or XOAUTH2 with tokenCredential"
                        : password == null ? "needs credentials(user, password)" : null;
                case EXTERNAL -> keyStorePath == null && sslContext == null ? "needs a client certificate: keyStore "
                        + "or an sslContext with a key" : null;
                case ANONYMOUS -> null;
            };
        }
    }
}

package org.acemq.amqp.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SaslMechanism;
import org.acemq.amqp.consumer.SourceCapability;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * The {@code acemq.*} properties. A setting left unset keeps the runtime's default (the {@code DEFAULT_*}
 * constants of {@code AmqpConsumer}, {@code ConnectionSettings}, {@code Subscription} and the stores), so the
 * defaults live in one place; {@code docs/spring-boot.md} lists them.
 *
 * <p>Public only so that Spring Boot can bind it and generate its configuration metadata; applications configure
 * the starter through properties, not through this class.
 */
@ConfigurationProperties("acemq")
public class AcemqProperties {

    /** The name of the connection {@code acemq.connection.*} configures, used by listeners that name none. */
    public static final String DEFAULT_CONNECTION = "default";

    /** Where and how to connect to the broker: the connection named "default". */
    private final Connection connection = new Connection();
    /**
     * Further connections by name, each with the keys of acemq.connection.*; a listener chooses one with its
     * connection setting ("default", acemq.connection.*, unless it names another).
     */
    private final Map<String, Connection> connections = new LinkedHashMap<>();
    /** The consumer that runs every listener. */
    private final Consumer consumer = new Consumer();
    /** The idempotency store. */
    private final Store store = new Store();
    /** Per-listener settings, keyed by the listener's name (its address unless it names itself). */
    private final Map<String, Listener> listeners = new LinkedHashMap<>();

    /** @return where and how to connect to the broker: the connection named {@value #DEFAULT_CONNECTION} */
    public Connection getConnection() {
        return connection;
    }

    /**
     * @return further connections by name, each with the keys of {@code acemq.connection.*}; a listener chooses one
     *     with its {@code connection} setting
     */
    public Map<String, Connection> getConnections() {
        return connections;
    }

    /** @return the consumer that runs every listener */
    public Consumer getConsumer() {
        return consumer;
    }

    /** @return the idempotency store */
    public Store getStore() {
        return store;
    }

    /** @return per-listener settings, keyed by the listener's name (its address unless it names itself) */
    public Map<String, Listener> getListeners() {
        return listeners;
    }

    /** {@code acemq.connection.*}: the AMQP connection. */
    public static class Connection {
        /** Broker host. */
        private String host = "localhost";
        /** Broker port (AMQP 5672, AMQPS usually 5671). */
        private int port = 5672;
        /** SASL user name; anonymous when unset. Never logged, never in health details or metrics. */
        private String username;
        /** SASL password. Never logged, never in health details or metrics. */
        private String password;
        /** AMQP open hostname (virtual host). */
        private String virtualHost;
        /** Further locations to fail over to, each "host:port". */
        private List<String> failover = new ArrayList<>();
        /** Idle timeout (runtime default 60s). */
        private Duration idleTimeout;
        /** Timeout for opening the connection (runtime default 15s). */
        private Duration openTimeout;
        /** Timeout for transaction declare/discharge and drains (runtime default 30s). */
        private Duration requestTimeout;
        /** Largest AMQP frame accepted from the broker, in bytes, 512 to 16 MiB (runtime default 65536). */
        private Integer maxFrameSize;
        /** TLS. */
        private final Tls tls = new Tls();
        /** SASL mechanism choice. */
        private final Sasl sasl = new Sasl();
        /** A bearer-token credential instead of the password. */
        private final Token token = new Token();
        /** Reconnection after a lost connection. */
        private final Reconnect reconnect = new Reconnect();

        /** @return broker host */
        public String getHost() {
            return host;
        }

        /** @param host broker host */
        public void setHost(String host) {
            this.host = host;
        }

        /** @return broker port (AMQP 5672, AMQPS usually 5671) */
        public int getPort() {
            return port;
        }

        /** @param port broker port (AMQP 5672, AMQPS usually 5671) */
        public void setPort(int port) {
            this.port = port;
        }

        /** @return SASL user name; anonymous when unset. Never logged, never in health details or metrics */
        public String getUsername() {
            return username;
        }

        /** @param username SASL user name; anonymous when unset. Never logged, never in health details or metrics */
        public void setUsername(String username) {
            this.username = username;
        }

        /** @return SASL password. Never logged, never in health details or metrics */
        public String getPassword() {
            return password;
        }

        /** @param password SASL password. Never logged, never in health details or metrics */
        public void setPassword(String password) {
            this.password = password;
        }

        /** @return AMQP open hostname (virtual host) */
        public String getVirtualHost() {
            return virtualHost;
        }

        /** @param virtualHost AMQP open hostname (virtual host) */
        public void setVirtualHost(String virtualHost) {
            this.virtualHost = virtualHost;
        }

        /** @return further locations to fail over to, each "host:port" */
        public List<String> getFailover() {
            return failover;
        }

        /** @param failover further locations to fail over to, each "host:port" */
        public void setFailover(List<String> failover) {
            this.failover = failover;
        }

        /** @return idle timeout (runtime default 60s) */
        public Duration getIdleTimeout() {
            return idleTimeout;
        }

        /** @param idleTimeout idle timeout (runtime default 60s) */
        public void setIdleTimeout(Duration idleTimeout) {
            this.idleTimeout = idleTimeout;
        }

        /** @return timeout for opening the connection (runtime default 15s) */
        public Duration getOpenTimeout() {
            return openTimeout;
        }

        /** @param openTimeout timeout for opening the connection (runtime default 15s) */
        public void setOpenTimeout(Duration openTimeout) {
            this.openTimeout = openTimeout;
        }

        /** @return timeout for transaction declare/discharge and drains (runtime default 30s) */
        public Duration getRequestTimeout() {
            return requestTimeout;
        }

        /** @param requestTimeout timeout for transaction declare/discharge and drains (runtime default 30s) */
        public void setRequestTimeout(Duration requestTimeout) {
            this.requestTimeout = requestTimeout;
        }

        /** @return largest AMQP frame accepted from the broker, in bytes (runtime default 65536) */
        public Integer getMaxFrameSize() {
            return maxFrameSize;
        }

        /** @param maxFrameSize largest AMQP frame accepted from the broker, in bytes, 512 to 16 MiB */
        public void setMaxFrameSize(Integer maxFrameSize) {
            this.maxFrameSize = maxFrameSize;
        }

        /** @return TLS */
        public Tls getTls() {
            return tls;
        }

        /** @return SASL mechanism choice */
        public Sasl getSasl() {
            return sasl;
        }

        /** @return a bearer-token credential instead of the password */
        public Token getToken() {
            return token;
        }

        /** @return reconnection after a lost connection */
        public Reconnect getReconnect() {
            return reconnect;
        }
    }

    /** {@code acemq.connection.tls.*}. */
    public static class Tls {
        /** Whether to connect with TLS (implied by bundle, trust-store and key-store). */
        private boolean enabled;
        /** Name of a Spring Boot SSL bundle (spring.ssl.bundle.*) whose SSLContext is used. */
        private String bundle;
        /** Trust store path (JKS or PKCS12), when no bundle is named. */
        private String trustStore;
        /** Trust store password. */
        private String trustStorePassword;
        /** Key store path for a client certificate, when no bundle is named. */
        private String keyStore;
        /** Key store password. */
        private String keyStorePassword;
        /** Whether the broker's host name must match its certificate. */
        private boolean verifyHost = true;
        /** Trust store type, PKCS12 or JKS (runtime default PKCS12, which loads JKS files too). */
        private String trustStoreType;
        /** Key store type, PKCS12 or JKS (runtime default PKCS12, which loads JKS files too). */
        private String keyStoreType;
        /** Alias of the key store entry presented as the client certificate. */
        private String keyAlias;
        /** TLS protocols the consumer may negotiate, e.g. TLSv1.3 (default: the JVM's). */
        private List<String> protocols = new ArrayList<>();
        /** TLS cipher suites the consumer may negotiate (default: the JVM's). */
        private List<String> cipherSuites = new ArrayList<>();

        /** @return the {@code enabled} setting */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled the {@code enabled} setting */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** @return name of a Spring Boot SSL bundle (spring.ssl.bundle.*) whose SSLContext is used */
        public String getBundle() {
            return bundle;
        }

        /** @param bundle name of a Spring Boot SSL bundle (spring.ssl.bundle.*) whose SSLContext is used */
        public void setBundle(String bundle) {
            this.bundle = bundle;
        }

        /** @return trust store path (JKS or PKCS12), when no bundle is named */
        public String getTrustStore() {
            return trustStore;
        }

        /** @param trustStore trust store path (JKS or PKCS12), when no bundle is named */
        public void setTrustStore(String trustStore) {
            this.trustStore = trustStore;
        }

        /** @return trust store password */
        public String getTrustStorePassword() {
            return trustStorePassword;
        }

        /** @param trustStorePassword trust store password */
        public void setTrustStorePassword(String trustStorePassword) {
            this.trustStorePassword = trustStorePassword;
        }

        /** @return key store path for a client certificate, when no bundle is named */
        public String getKeyStore() {
            return keyStore;
        }

        /** @param keyStore key store path for a client certificate, when no bundle is named */
        public void setKeyStore(String keyStore) {
            this.keyStore = keyStore;
        }

        /** @return key store password */
        public String getKeyStorePassword() {
            return keyStorePassword;
        }

        /** @param keyStorePassword key store password */
        public void setKeyStorePassword(String keyStorePassword) {
            this.keyStorePassword = keyStorePassword;
        }

        /** @return whether the broker's host name must match its certificate */
        public boolean isVerifyHost() {
            return verifyHost;
        }

        /** @param verifyHost whether the broker's host name must match its certificate */
        public void setVerifyHost(boolean verifyHost) {
            this.verifyHost = verifyHost;
        }

        /** @return trust store type, PKCS12 or JKS (runtime default PKCS12, which loads JKS files too) */
        public String getTrustStoreType() {
            return trustStoreType;
        }

        /** @param trustStoreType trust store type, PKCS12 or JKS (runtime default PKCS12, which loads JKS files too) */
        public void setTrustStoreType(String trustStoreType) {
            this.trustStoreType = trustStoreType;
        }

        /** @return key store type, PKCS12 or JKS (runtime default PKCS12, which loads JKS files too) */
        public String getKeyStoreType() {
            return keyStoreType;
        }

        /** @param keyStoreType key store type, PKCS12 or JKS (runtime default PKCS12, which loads JKS files too) */
        public void setKeyStoreType(String keyStoreType) {
            this.keyStoreType = keyStoreType;
        }

        /** @return alias of the key store entry presented as the client certificate */
        public String getKeyAlias() {
            return keyAlias;
        }

        /** @param keyAlias alias of the key store entry presented as the client certificate */
        public void setKeyAlias(String keyAlias) {
            this.keyAlias = keyAlias;
        }

        /** @return TLS protocols the consumer may negotiate, e.g. TLSv1.3 (default: the JVM's) */
        public List<String> getProtocols() {
            return protocols;
        }

        /** @param protocols TLS protocols the consumer may negotiate, e.g. TLSv1.3 (default: the JVM's) */
        public void setProtocols(List<String> protocols) {
            this.protocols = protocols;
        }

        /** @return TLS cipher suites the consumer may negotiate (default: the JVM's) */
        public List<String> getCipherSuites() {
            return cipherSuites;
        }

        /** @param cipherSuites TLS cipher suites the consumer may negotiate (default: the JVM's) */
        public void setCipherSuites(List<String> cipherSuites) {
            this.cipherSuites = cipherSuites;
        }
    }

    /** {@code acemq.connection.sasl.*}. */
    public static class Sasl {
        /** SASL mechanisms the consumer may use (default: any the broker offers whose credentials are set). */
        private List<SaslMechanism> mechanisms = new ArrayList<>();

        /** @return SASL mechanisms the consumer may use (default: any the broker offers whose credentials are set) */
        public List<SaslMechanism> getMechanisms() {
            return mechanisms;
        }

        /** @param mechanisms SASL mechanisms the consumer may use (default: any the broker offers whose credentials
         *     are set) */
        public void setMechanisms(List<SaslMechanism> mechanisms) {
            this.mechanisms = mechanisms;
        }
    }

    /** {@code acemq.connection.token.*}: OAuth 2 bearer tokens instead of a password. */
    public static class Token {
        /** Name of the application's TokenCredential bean; the user name is acemq.connection.username. */
        private String credential;
        /** How long before a token expires the connection is renewed with a new one (runtime default 1m). */
        private Duration refreshBefore;

        /** @return name of the application's TokenCredential bean; the user name is acemq.connection.username */
        public String getCredential() {
            return credential;
        }

        /** @param credential name of the application's TokenCredential bean; the user name is
         *     acemq.connection.username */
        public void setCredential(String credential) {
            this.credential = credential;
        }

        /** @return how long before a token expires the connection is renewed with a new one (runtime default 1m) */
        public Duration getRefreshBefore() {
            return refreshBefore;
        }

        /** @param refreshBefore how long before a token expires the connection is renewed with a new one (runtime
         *     default 1m) */
        public void setRefreshBefore(Duration refreshBefore) {
            this.refreshBefore = refreshBefore;
        }
    }

    /** {@code acemq.connection.reconnect.*}. */
    public static class Reconnect {
        /** Whether to reconnect after a lost connection (runtime default true). */
        private Boolean enabled;
        /** First delay between reconnect attempts, doubling (runtime default 100ms). */
        private Duration initialDelay;
        /** Longest delay between reconnect attempts (runtime default 30s). */
        private Duration maxDelay;
        /** Reconnect attempts before giving up, -1 for ever (runtime default -1). */
        private Integer maxAttempts;

        /** @return the {@code enabled} setting */
        public Boolean getEnabled() {
            return enabled;
        }

        /** @param enabled the {@code enabled} setting */
        public void setEnabled(Boolean enabled) {
            this.enabled = enabled;
        }

        /** @return first delay between reconnect attempts, doubling (runtime default 100ms) */
        public Duration getInitialDelay() {
            return initialDelay;
        }

        /** @param initialDelay first delay between reconnect attempts, doubling (runtime default 100ms) */
        public void setInitialDelay(Duration initialDelay) {
            this.initialDelay = initialDelay;
        }

        /** @return longest delay between reconnect attempts (runtime default 30s) */
        public Duration getMaxDelay() {
            return maxDelay;
        }

        /** @param maxDelay longest delay between reconnect attempts (runtime default 30s) */
        public void setMaxDelay(Duration maxDelay) {
            this.maxDelay = maxDelay;
        }

        /** @return the {@code max-attempts} setting */
        public Integer getMaxAttempts() {
            return maxAttempts;
        }

        /** @param maxAttempts the {@code max-attempts} setting */
        public void setMaxAttempts(Integer maxAttempts) {
            this.maxAttempts = maxAttempts;
        }
    }

    /** {@code acemq.consumer.*}: the consumer that runs every listener. */
    public static class Consumer {
        /** Whether the consumer starts with the application context; false leaves it to the application. */
        private boolean autoStartup = true;
        /** Default of acemq.listeners.<name>.idle-event-interval: no idle events unless set. */
        private Duration idleEventInterval;
        /** Name for threads and logs (runtime default "acemq"). */
        private String name;
        /** FAIL_CLOSED (default): release and pause while the store is down; FAIL_OPEN: process without de-duplication. */
        private StoreFailurePolicy storeFailurePolicy;
        /** How long stopping waits for running handlers (runtime default 30s). */
        private Duration shutdownTimeout;
        /**
         * Interval of the fallback credit check, used only where the runtime's protonj2 engine hooks cannot be
         * installed (runtime default 1s).
         */
        private Duration creditCheckInterval;
        /** How long to keep retrying a confirm after the handler succeeded (runtime default 30s). */
        private Duration confirmTimeout;
        /** First delay between probes of an unreachable store (runtime default 100ms). */
        private Duration storeRetryDelay;
        /** Longest delay between probes of an unreachable store (runtime default 10s). */
        private Duration maxStoreRetryDelay;
        /** Deliveries held by all listeners together, 0 for no cap (runtime default 0). */
        private Integer maxInFlightPerConnection;
        /**
         * Time between two runs of the outbox sweep, which sends what the store's transactional outbox still holds
         * (runtime default 10s).
         */
        private Duration outboxSweepInterval;
        /** How long a message must have waited in the outbox before the sweep takes it (runtime default 1m). */
        private Duration outboxSweepMinAge;
        /**
         * How long the oldest message may wait in the outbox before health turns DOWN (runtime default 5m; longer than
         * outbox-sweep-min-age plus outbox-sweep-interval).
         */
        private Duration outboxMaxAge;
        /**
         * Whether starting connects and attaches at once and fails the application's start-up when the broker cannot
         * be reached (runtime default false: the first connection is retried in the background while health says
         * DOWN).
         */
        private Boolean failFastStart;
        /**
         * Prefix of every listener's default scope ("prefix/address"), for example a service name where services
         * share one store table; a listener with a scope of its own keeps it as it is (runtime default: none).
         */
        private String scopePrefix;

        /**
         * @return prefix of every listener's default scope ("prefix/address"), for example a service name where
         *     services share one store table; a listener with a scope of its own keeps it as it is (runtime default:
         *     none)
         */
        public String getScopePrefix() {
            return scopePrefix;
        }

        /**
         * @param scopePrefix prefix of every listener's default scope ("prefix/address"), for example a service name
         *     where services share one store table; a listener with a scope of its own keeps it as it is (runtime
         *     default: none)
         */
        public void setScopePrefix(String scopePrefix) {
            this.scopePrefix = scopePrefix;
        }

        /**
         * @return whether starting connects and attaches at once and fails the application's start-up when the broker
         *     cannot be reached (runtime default false: the first connection is retried in the background while health
         *     says DOWN)
         */
        public Boolean getFailFastStart() {
            return failFastStart;
        }

        /**
         * @param failFastStart whether starting connects and attaches at once and fails the application's start-up when
         *     the broker cannot be reached (runtime default false: the first connection is retried in the background
         *     while health says DOWN)
         */
        public void setFailFastStart(Boolean failFastStart) {
            this.failFastStart = failFastStart;
        }

        /** @return whether the consumer starts with the application context; false leaves it to the application */
        public boolean isAutoStartup() {
            return autoStartup;
        }

        /**
         * @param autoStartup whether the consumer starts with the application context; false leaves it to the
         *     application
         */
        public void setAutoStartup(boolean autoStartup) {
            this.autoStartup = autoStartup;
        }

        /** @return the listeners' default idle-event interval, or null for no idle events */
        public Duration getIdleEventInterval() {
            return idleEventInterval;
        }

        /** @param idleEventInterval publish an AcemqListenerIdleEvent after this long without a message */
        public void setIdleEventInterval(Duration idleEventInterval) {
            this.idleEventInterval = idleEventInterval;
        }

        /** @return name for threads and logs (runtime default "acemq") */
        public String getName() {
            return name;
        }

        /** @param name name for threads and logs (runtime default "acemq") */
        public void setName(String name) {
            this.name = name;
        }

        /**
         * @return FAIL_CLOSED (default): release and pause while the store is down; FAIL_OPEN: process without de-
         *     duplication
         */
        public StoreFailurePolicy getStoreFailurePolicy() {
            return storeFailurePolicy;
        }

        /**
         * @param storeFailurePolicy FAIL_CLOSED (default): release and pause while the store is down; FAIL_OPEN:
         *     process without de-duplication
         */
        public void setStoreFailurePolicy(StoreFailurePolicy storeFailurePolicy) {
            this.storeFailurePolicy = storeFailurePolicy;
        }

        /** @return how long stopping waits for running handlers (runtime default 30s) */
        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        /** @param shutdownTimeout how long stopping waits for running handlers (runtime default 30s) */
        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }

        /**
         * @return interval of the fallback credit check, used only where the runtime's protonj2 engine hooks cannot be
         *     installed (runtime default 1s)
         */
        public Duration getCreditCheckInterval() {
            return creditCheckInterval;
        }

        /**
         * @param creditCheckInterval interval of the fallback credit check, used only where the runtime's protonj2
         *     engine hooks cannot be installed (runtime default 1s)
         */
        public void setCreditCheckInterval(Duration creditCheckInterval) {
            this.creditCheckInterval = creditCheckInterval;
        }

        /** @return how long to keep retrying a confirm after the handler succeeded (runtime default 30s) */
        public Duration getConfirmTimeout() {
            return confirmTimeout;
        }

        /**
         * @param confirmTimeout how long to keep retrying a confirm after the handler succeeded (runtime default 30s)
         */
        public void setConfirmTimeout(Duration confirmTimeout) {
            this.confirmTimeout = confirmTimeout;
        }

        /** @return first delay between probes of an unreachable store (runtime default 100ms) */
        public Duration getStoreRetryDelay() {
            return storeRetryDelay;
        }

        /** @param storeRetryDelay first delay between probes of an unreachable store (runtime default 100ms) */
        public void setStoreRetryDelay(Duration storeRetryDelay) {
            this.storeRetryDelay = storeRetryDelay;
        }

        /** @return longest delay between probes of an unreachable store (runtime default 10s) */
        public Duration getMaxStoreRetryDelay() {
            return maxStoreRetryDelay;
        }

        /** @param maxStoreRetryDelay longest delay between probes of an unreachable store (runtime default 10s) */
        public void setMaxStoreRetryDelay(Duration maxStoreRetryDelay) {
            this.maxStoreRetryDelay = maxStoreRetryDelay;
        }

        /** @return deliveries held by all listeners together, 0 for no cap (runtime default 0) */
        public Integer getMaxInFlightPerConnection() {
            return maxInFlightPerConnection;
        }

        /**
         * @param maxInFlightPerConnection deliveries held by all listeners together, 0 for no cap (runtime default 0)
         */
        public void setMaxInFlightPerConnection(Integer maxInFlightPerConnection) {
            this.maxInFlightPerConnection = maxInFlightPerConnection;
        }

        /**
         * @return time between two runs of the outbox sweep, which sends what the store's transactional outbox still
         *     holds (runtime default 10s)
         */
        public Duration getOutboxSweepInterval() {
            return outboxSweepInterval;
        }

        /**
         * @param outboxSweepInterval time between two runs of the outbox sweep, which sends what the store's
         *     transactional outbox still holds (runtime default 10s)
         */
        public void setOutboxSweepInterval(Duration outboxSweepInterval) {
            this.outboxSweepInterval = outboxSweepInterval;
        }

        /** @return how long a message must have waited in the outbox before the sweep takes it (runtime default 1m) */
        public Duration getOutboxSweepMinAge() {
            return outboxSweepMinAge;
        }

        /**
         * @param outboxSweepMinAge how long a message must have waited in the outbox before the sweep takes it
         *     (runtime default 1m)
         */
        public void setOutboxSweepMinAge(Duration outboxSweepMinAge) {
            this.outboxSweepMinAge = outboxSweepMinAge;
        }

        /**
         * @return how long the oldest message may wait in the outbox before health turns DOWN (runtime default 5m;
         *     longer than outbox-sweep-min-age plus outbox-sweep-interval)
         */
        public Duration getOutboxMaxAge() {
            return outboxMaxAge;
        }

        /**
         * @param outboxMaxAge how long the oldest message may wait in the outbox before health turns DOWN (runtime
         *     default 5m; longer than outbox-sweep-min-age plus outbox-sweep-interval)
         */
        public void setOutboxMaxAge(Duration outboxMaxAge) {
            this.outboxMaxAge = outboxMaxAge;
        }
    }

    /** The values of {@code acemq.store.type}. */
    public enum StoreType {
        /** {@code InMemoryIdempotencyStore}: per process, forgotten on restart. */
        MEMORY,
        /**
         * {@code JdbcIdempotencyStore} on the application's DataSource: PostgreSQL, MariaDB / MySQL or H2 (tests),
         * read from the DataSource unless {@code acemq.store.jdbc.dialect} is set.
         */
        JDBC,
        /**
         * {@code RedisIdempotencyStore} (the application adds {@code acemq-idempotency-redis}): on
         * {@code acemq.store.redis.uri} or {@code .cluster-nodes} when set, else on the application's Spring Data Redis
         * {@code LettuceConnectionFactory}.
         */
        REDIS
    }

    /** {@code acemq.store.*}: the idempotency store (ignored when the application defines an IdempotencyStore bean). */
    public static class Store {
        /** Which store to create. */
        private StoreType type = StoreType.MEMORY;
        /** How long a claim lasts unless renewed (store default 30s). */
        private Duration lease;
        /** How long a confirmed id is remembered (store default 24h). */
        private Duration retention;
        /** The in-memory store. */
        private final Memory memory = new Memory();
        /** The JDBC store. */
        private final Jdbc jdbc = new Jdbc();
        /** The Redis store. */
        private final Redis redis = new Redis();

        /** @return which store to create */
        public StoreType getType() {
            return type;
        }

        /** @param type which store to create */
        public void setType(StoreType type) {
            this.type = type;
        }

        /** @return how long a claim lasts unless renewed (store default 30s) */
        public Duration getLease() {
            return lease;
        }

        /** @param lease how long a claim lasts unless renewed (store default 30s) */
        public void setLease(Duration lease) {
            this.lease = lease;
        }

        /** @return how long a confirmed id is remembered (store default 24h) */
        public Duration getRetention() {
            return retention;
        }

        /** @param retention how long a confirmed id is remembered (store default 24h) */
        public void setRetention(Duration retention) {
            this.retention = retention;
        }

        /** @return the in-memory store */
        public Memory getMemory() {
            return memory;
        }

        /** @return the JDBC store */
        public Jdbc getJdbc() {
            return jdbc;
        }

        /** @return the Redis store */
        public Redis getRedis() {
            return redis;
        }
    }

    /**
     * {@code acemq.store.redis.*}: the Redis store ({@code acemq.store.type=redis}). Without {@code uri} and
     * {@code cluster-nodes} the store uses the client of the application's Spring Data Redis
     * {@code LettuceConnectionFactory}.
     */
    public static class Redis {
        /** A standalone or Sentinel-managed Redis, as a Lettuce URI (redis://, rediss://, redis-sentinel://). */
        private String uri;
        /** The nodes of a Redis Cluster to start from (redis://host:port or host:port); any one is enough. */
        private List<String> clusterNodes = new ArrayList<>();
        /** Put in front of every key (store default acemq:idempotency:); no braces. */
        private String keyPrefix;
        /** How long a call waits for Redis before the store counts as unavailable (store default 5s). */
        private Duration timeout;
        /** This instance's owner identity (store default: generated per start). */
        private String owner;

        /** @return a standalone or Sentinel-managed Redis, as a Lettuce URI, or null */
        public String getUri() {
            return uri;
        }

        /** @param uri a standalone or Sentinel-managed Redis, as a Lettuce URI (redis://, rediss://, ...) */
        public void setUri(String uri) {
            this.uri = uri;
        }

        /** @return the nodes of a Redis Cluster to start from; empty for none */
        public List<String> getClusterNodes() {
            return clusterNodes;
        }

        /** @param clusterNodes the nodes of a Redis Cluster to start from (redis://host:port or host:port) */
        public void setClusterNodes(List<String> clusterNodes) {
            this.clusterNodes = clusterNodes;
        }

        /** @return the prefix in front of every key (store default acemq:idempotency:) */
        public String getKeyPrefix() {
            return keyPrefix;
        }

        /** @param keyPrefix put in front of every key (store default acemq:idempotency:); no braces */
        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        /** @return how long a call waits for Redis (store default 5s) */
        public Duration getTimeout() {
            return timeout;
        }

        /** @param timeout how long a call waits for Redis before the store counts as unavailable (store default 5s) */
        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        /** @return this instance's owner identity (store default: generated per start) */
        public String getOwner() {
            return owner;
        }

        /** @param owner this instance's owner identity (store default: generated per start) */
        public void setOwner(String owner) {
            this.owner = owner;
        }
    }

    /** {@code acemq.store.memory.*}. */
    public static class Memory {
        /** Most ids remembered (store default 1000000). */
        private Long maxEntries;

        /** @return most ids remembered (store default 1000000) */
        public Long getMaxEntries() {
            return maxEntries;
        }

        /** @param maxEntries most ids remembered (store default 1000000) */
        public void setMaxEntries(Long maxEntries) {
            this.maxEntries = maxEntries;
        }
    }

    /** {@code acemq.store.jdbc.*}. */
    public static class Jdbc {
        /** Table name, "name" or "schema.name" (store default acemq_idempotency). */
        private String tableName;
        /** The transactional outbox's table, "name" or "schema.name" (store default: next to the table, acemq_outbox). */
        private String outboxTableName;
        /** Whether to run CREATE TABLE/INDEX IF NOT EXISTS at startup; false when Flyway or Liquibase own the schema. */
        private boolean initializeSchema = true;
        /** This instance's owner id (store default: random per start). */
        private UUID owner;
        /** Rows deleted per purge statement (store default 5000). */
        private Integer purgeBatchSize;
        /** Pause between purge batches (store default 20ms). */
        private Duration purgePause;
        /** How often expired rows are purged while the consumer runs; 0 turns purging off. */
        private Duration purgeInterval = Duration.ofMinutes(1);
        /** Group commit of concurrent claims, confirms and releases. */
        private final GroupCommit groupCommit = new GroupCommit();
        /** The database product (postgresql, mariadb, h2); default: read from the DataSource's connection. */
        private org.acemq.amqp.store.jdbc.JdbcDialect dialect;

        /** @return the database product, or null to read it from the DataSource's connection */
        public org.acemq.amqp.store.jdbc.JdbcDialect getDialect() {
            return dialect;
        }

        /** @param dialect the database product (postgresql, mariadb, h2), or null to read it from the DataSource */
        public void setDialect(org.acemq.amqp.store.jdbc.JdbcDialect dialect) {
            this.dialect = dialect;
        }

        /** @return table name, "name" or "schema.name" (store default acemq_idempotency) */
        public String getTableName() {
            return tableName;
        }

        /** @param tableName table name, "name" or "schema.name" (store default acemq_idempotency) */
        public void setTableName(String tableName) {
            this.tableName = tableName;
        }

        /** @return the outbox table, "name" or "schema.name", or null for the store's default next to the table */
        public String getOutboxTableName() {
            return outboxTableName;
        }

        /**
         * @param outboxTableName the transactional outbox's table, "name" or "schema.name" (store default: next to the
         *     table, acemq_outbox for acemq_idempotency)
         */
        public void setOutboxTableName(String outboxTableName) {
            this.outboxTableName = outboxTableName;
        }

        /**
         * @return whether to run CREATE TABLE/INDEX IF NOT EXISTS at startup; false when Flyway or Liquibase own the
         *     schema
         */
        public boolean isInitializeSchema() {
            return initializeSchema;
        }

        /**
         * @param initializeSchema whether to run CREATE TABLE/INDEX IF NOT EXISTS at startup; false when Flyway or
         *     Liquibase own the schema
         */
        public void setInitializeSchema(boolean initializeSchema) {
            this.initializeSchema = initializeSchema;
        }

        /** @return this instance's owner id (store default: random per start) */
        public UUID getOwner() {
            return owner;
        }

        /** @param owner this instance's owner id (store default: random per start) */
        public void setOwner(UUID owner) {
            this.owner = owner;
        }

        /** @return rows deleted per purge statement (store default 5000) */
        public Integer getPurgeBatchSize() {
            return purgeBatchSize;
        }

        /** @param purgeBatchSize rows deleted per purge statement (store default 5000) */
        public void setPurgeBatchSize(Integer purgeBatchSize) {
            this.purgeBatchSize = purgeBatchSize;
        }

        /** @return pause between purge batches (store default 20ms) */
        public Duration getPurgePause() {
            return purgePause;
        }

        /** @param purgePause pause between purge batches (store default 20ms) */
        public void setPurgePause(Duration purgePause) {
            this.purgePause = purgePause;
        }

        /** @return how often expired rows are purged while the consumer runs; 0 turns purging off */
        public Duration getPurgeInterval() {
            return purgeInterval;
        }

        /** @param purgeInterval how often expired rows are purged while the consumer runs; 0 turns purging off */
        public void setPurgeInterval(Duration purgeInterval) {
            this.purgeInterval = purgeInterval;
        }

        /** @return group commit of concurrent claims, confirms and releases */
        public GroupCommit getGroupCommit() {
            return groupCommit;
        }
    }

    /** {@code acemq.store.jdbc.group-commit.*}. */
    public static class GroupCommit {
        /**
         * Whether group commit is on (store default on: up to the pool's size every caller runs its own statement,
         * only callers that would wait for a connection share batches); false turns it off.
         */
        private Boolean enabled;
        /** Most calls per batch statement (store default 128). */
        private Integer maxBatch;
        /**
         * Most batch statements executing at once (store default: the DataSource's pool size; 8 when only
         * {@code max-batch} is set).
         */
        private Integer maxInFlight;

        /** @return whether group commit is on; null keeps the store's default (on) */
        public Boolean getEnabled() {
            return enabled;
        }

        /** @param enabled whether group commit is on; null keeps the store's default (on) */
        public void setEnabled(Boolean enabled) {
            this.enabled = enabled;
        }

        /** @return most calls per batch statement (store default 128) */
        public Integer getMaxBatch() {
            return maxBatch;
        }

        /** @param maxBatch most calls per batch statement (store default 128) */
        public void setMaxBatch(Integer maxBatch) {
            this.maxBatch = maxBatch;
        }

        /** @return most batch statements executing at once (store default: the pool's size) */
        public Integer getMaxInFlight() {
            return maxInFlight;
        }

        /** @param maxInFlight most batch statements executing at once (store default: the pool's size) */
        public void setMaxInFlight(Integer maxInFlight) {
            this.maxInFlight = maxInFlight;
        }
    }

    /**
     * {@code acemq.listeners.<name>.*}: the settings of one {@link AcemqListener}. Each one set here wins over the
     * annotation's attribute of the same name.
     */
    public static class Listener {
        /** The queue or address to consume. */
        private String address;
        /** The connection to consume on: "default" (acemq.connection.*) or a name of acemq.connections. */
        private String connection;
        /** Handler threads (runtime default 1). */
        private Integer concurrency;
        /** Deliveries that may wait beyond those being handled (runtime default 100). */
        private Integer prefetch;
        /** AT_LEAST_ONCE (default), TRANSACTIONAL or AT_MOST_ONCE. */
        private AcknowledgementMode acknowledgementMode;
        /** Attempts before a message is rejected as poison (runtime default 5). */
        private Integer maxAttempts;
        /** Exception types (fully qualified class names) that reject a message at once, added to the annotation's. */
        private List<Class<? extends Throwable>> permanentFailures = new ArrayList<>();
        /** MODIFIED or RELEASED; unset: modified where the broker implements it, released where not (RabbitMQ 3). */
        private Outcome transientFailureOutcome;
        /** How long a transiently failed delivery is held before it goes back: exponential with jitter. */
        private final RetryBackoff retryBackoff = new RetryBackoff();
        /** QUEUE (default), TOPIC or NONE: the kind of node the receiver asks the broker for. */
        private SourceCapability sourceCapability;
        /** How long an IN_PROGRESS copy is held before it is released (runtime default 1s). */
        private Duration inProgressDelay;
        /** REJECT (default), APPLICATION_PROPERTY or BODY_HASH. */
        private MissingIdPolicy.Kind missingIdPolicy;
        /** The application property that keys messages without a message-id (APPLICATION_PROPERTY). */
        private String missingIdProperty;
        /** Session shared with the other listeners of the same group. */
        private String sessionGroup;
        /** AMQP link name. */
        private String linkName;
        /** TRANSACTIONAL acknowledgement: settled deliveries per commit (runtime default 100). */
        private Integer transactionBatchSize;
        /** TRANSACTIONAL acknowledgement: longest wait before a commit (runtime default 50ms). */
        private Duration transactionBatchTime;
        /** Whether the claim's lease is renewed while the handler runs (runtime default true). */
        private Boolean renewLeases;
        /** Whether the listener starts with the container (default true); false: AcemqListenerRegistry starts it. */
        private Boolean autoStartup;
        /** Publish an AcemqListenerIdleEvent after this long without a message (default: the consumer's). */
        private Duration idleEventInterval;
        /**
         * Whether the handler and the store's confirm run in one database transaction (not to be confused with
         * acknowledgement-mode=transactional, AMQP transactions on the broker).
         */
        private Boolean databaseTransaction;
        /** Deprecated: the former name of database-transaction. */
        private Boolean transactional;
        /** Bean name of the transaction manager for a listener with database-transaction. */
        private String transactionManager;
        /** Bean name of the RejectionHandler consulted before the listener's messages are rejected. */
        private String rejectionHandler;
        private String handlerExecutor;
        /**
         * Scope of the listener's idempotency keys, used as it is (default: the address, or the address and a token
         * per consumer for a topic subscription, prefixed with acemq.consumer.scope-prefix).
         */
        private String scope;
        /**
         * SpEL expression computing each message's idempotency key from headers, payload, messageId and envelope,
         * e.g. "payload.orderId" or "headers['orderId']" (default: the message-id). Not with key-property.
         */
        private String key;
        /** Application property holding each message's idempotency key, e.g. orderId (default: the message-id). */
        private String keyProperty;
        /** BODY (default): a copy whose key is known with another body is a conflict; OFF: no check. */
        private String fingerprint;
        /** Application properties hashed with the body into the fingerprint, in order. */
        private List<String> fingerprintProperties;
        /** ACCEPT (default): a conflicting copy is settled as a copy and counted; REJECT: it is rejected. */
        private Fingerprint.Action onConflict;
        /**
         * Orders processing by a key: "group-id" (the AMQP group-id) or a SpEL expression over headers, payload,
         * messageId and envelope, e.g. "payload.accountId" (default: not ordered). Not with order-by-property.
         */
        private String orderBy;
        /** Application property to order processing by, e.g. accountId (default: not ordered). Not with order-by. */
        private String orderByProperty;
        /** Ordered listeners: messages of one key that hold a place in the window (runtime default 4). */
        private Integer keyBacklog;
        /** Ordered listeners: messages of busy keys parked beyond the window before intake stops (default 100000). */
        private Integer parkedLimit;
        /**
         * Ordered listeners: what parked messages may weigh before intake stops, each its encoded size plus 1 KiB
         * (default 64MB).
         */
        private DataSize parkedBytes;
        /** Whether the listener takes messages a batch at a time (List parameters; default false). */
        private Boolean batch;
        /** Batch listeners: the most messages per call (runtime default 100). */
        private Integer batchSize;
        /** Batch listeners: how long a batch waits to fill before the method gets what arrived (default 100ms). */
        private Duration batchTime;

        /** @return the queue or address to consume */
        public String getAddress() {
            return address;
        }

        /** @param address the queue or address to consume */
        public void setAddress(String address) {
            this.address = address;
        }

        /** @return the connection to consume on: "default" (acemq.connection.*) or a name of acemq.connections */
        public String getConnection() {
            return connection;
        }

        /** @param connection the connection to consume on: "default" or a name of acemq.connections */
        public void setConnection(String connection) {
            this.connection = connection;
        }

        /** @return handler threads (runtime default 1) */
        public Integer getConcurrency() {
            return concurrency;
        }

        /** @param concurrency handler threads (runtime default 1) */
        public void setConcurrency(Integer concurrency) {
            this.concurrency = concurrency;
        }

        /** @return deliveries that may wait beyond those being handled (runtime default 100) */
        public Integer getPrefetch() {
            return prefetch;
        }

        /** @param prefetch deliveries that may wait beyond those being handled (runtime default 100) */
        public void setPrefetch(Integer prefetch) {
            this.prefetch = prefetch;
        }

        /** @return AT_LEAST_ONCE (default), TRANSACTIONAL or AT_MOST_ONCE */
        public AcknowledgementMode getAcknowledgementMode() {
            return acknowledgementMode;
        }

        /** @param acknowledgementMode AT_LEAST_ONCE (default), TRANSACTIONAL or AT_MOST_ONCE */
        public void setAcknowledgementMode(AcknowledgementMode acknowledgementMode) {
            this.acknowledgementMode = acknowledgementMode;
        }

        /** @return the {@code max-attempts} setting */
        public Integer getMaxAttempts() {
            return maxAttempts;
        }

        /** @param maxAttempts the {@code max-attempts} setting */
        public void setMaxAttempts(Integer maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        /**
         * @return exception types (fully qualified class names) that reject a message at once, added to the
         *     annotation's
         */
        public List<Class<? extends Throwable>> getPermanentFailures() {
            return permanentFailures;
        }

        /**
         * @param permanentFailures exception types (fully qualified class names) that reject a message at once, added
         *     to the annotation's
         */
        public void setPermanentFailures(List<Class<? extends Throwable>> permanentFailures) {
            this.permanentFailures = permanentFailures;
        }

        /**
         * @return MODIFIED or RELEASED; unset: modified where the broker implements it, released where not (RabbitMQ 3)
         */
        public Outcome getTransientFailureOutcome() {
            return transientFailureOutcome;
        }

        /**
         * @param transientFailureOutcome MODIFIED or RELEASED; unset: modified where the broker implements it, released
         *     where not (RabbitMQ 3)
         */
        public void setTransientFailureOutcome(Outcome transientFailureOutcome) {
            this.transientFailureOutcome = transientFailureOutcome;
        }

        /** @return how long a transiently failed delivery is held before it goes back: exponential with jitter */
        public RetryBackoff getRetryBackoff() {
            return retryBackoff;
        }

        /** @return QUEUE (default), TOPIC or NONE: the kind of node the receiver asks the broker for */
        public SourceCapability getSourceCapability() {
            return sourceCapability;
        }

        /** @param sourceCapability QUEUE (default), TOPIC or NONE: the kind of node the receiver asks the broker for */
        public void setSourceCapability(SourceCapability sourceCapability) {
            this.sourceCapability = sourceCapability;
        }

        /** @return how long an IN_PROGRESS copy is held before it is released (runtime default 1s) */
        public Duration getInProgressDelay() {
            return inProgressDelay;
        }

        /** @param inProgressDelay how long an IN_PROGRESS copy is held before it is released (runtime default 1s) */
        public void setInProgressDelay(Duration inProgressDelay) {
            this.inProgressDelay = inProgressDelay;
        }

        /** @return REJECT (default), APPLICATION_PROPERTY or BODY_HASH */
        public MissingIdPolicy.Kind getMissingIdPolicy() {
            return missingIdPolicy;
        }

        /** @param missingIdPolicy REJECT (default), APPLICATION_PROPERTY or BODY_HASH */
        public void setMissingIdPolicy(MissingIdPolicy.Kind missingIdPolicy) {
            this.missingIdPolicy = missingIdPolicy;
        }

        /** @return the application property that keys messages without a message-id (APPLICATION_PROPERTY) */
        public String getMissingIdProperty() {
            return missingIdProperty;
        }

        /**
         * @param missingIdProperty the application property that keys messages without a message-id
         *     (APPLICATION_PROPERTY)
         */
        public void setMissingIdProperty(String missingIdProperty) {
            this.missingIdProperty = missingIdProperty;
        }

        /** @return session shared with the other listeners of the same group */
        public String getSessionGroup() {
            return sessionGroup;
        }

        /** @param sessionGroup session shared with the other listeners of the same group */
        public void setSessionGroup(String sessionGroup) {
            this.sessionGroup = sessionGroup;
        }

        /** @return AMQP link name */
        public String getLinkName() {
            return linkName;
        }

        /** @param linkName AMQP link name */
        public void setLinkName(String linkName) {
            this.linkName = linkName;
        }

        /** @return TRANSACTIONAL acknowledgement: settled deliveries per commit (runtime default 100) */
        public Integer getTransactionBatchSize() {
            return transactionBatchSize;
        }

        /**
         * @param transactionBatchSize TRANSACTIONAL acknowledgement: settled deliveries per commit (runtime default
         *     100)
         */
        public void setTransactionBatchSize(Integer transactionBatchSize) {
            this.transactionBatchSize = transactionBatchSize;
        }

        /** @return TRANSACTIONAL acknowledgement: longest wait before a commit (runtime default 50ms) */
        public Duration getTransactionBatchTime() {
            return transactionBatchTime;
        }

        /**
         * @param transactionBatchTime TRANSACTIONAL acknowledgement: longest wait before a commit (runtime default
         *     50ms)
         */
        public void setTransactionBatchTime(Duration transactionBatchTime) {
            this.transactionBatchTime = transactionBatchTime;
        }

        /** @return whether the claim's lease is renewed while the handler runs (runtime default true) */
        public Boolean getRenewLeases() {
            return renewLeases;
        }

        /** @param renewLeases whether the claim's lease is renewed while the handler runs (runtime default true) */
        public void setRenewLeases(Boolean renewLeases) {
            this.renewLeases = renewLeases;
        }

        /** @return whether the listener starts with the container, or null for the annotation's / default (true) */
        public Boolean getAutoStartup() {
            return autoStartup;
        }

        /** @param autoStartup false to leave the listener stopped until the registry starts it */
        public void setAutoStartup(Boolean autoStartup) {
            this.autoStartup = autoStartup;
        }

        /** @return how long without a message before an idle event, or null for the consumer's default */
        public Duration getIdleEventInterval() {
            return idleEventInterval;
        }

        /** @param idleEventInterval how long without a message before an AcemqListenerIdleEvent */
        public void setIdleEventInterval(Duration idleEventInterval) {
            this.idleEventInterval = idleEventInterval;
        }

        /** @return whether the handler and the store's confirm run in one database transaction */
        public Boolean getDatabaseTransaction() {
            return databaseTransaction;
        }

        /**
         * @param databaseTransaction whether the handler and the store's confirm run in one database transaction
         */
        public void setDatabaseTransaction(Boolean databaseTransaction) {
            this.databaseTransaction = databaseTransaction;
        }

        /**
         * @return the value of the deprecated {@code transactional} property
         * @deprecated use {@link #getDatabaseTransaction()}
         */
        @Deprecated
        public Boolean getTransactional() {
            return transactional;
        }

        /**
         * @param transactional as {@link #setDatabaseTransaction}; setting both fails the start
         * @deprecated use {@link #setDatabaseTransaction(Boolean)} ({@code database-transaction}): this name is easily
         *     taken for {@code acknowledgement-mode=transactional}
         */
        @Deprecated
        public void setTransactional(Boolean transactional) {
            this.transactional = transactional;
        }

        /** @return bean name of the RejectionHandler for this listener */
        public String getRejectionHandler() {
            return rejectionHandler;
        }

        /** @param rejectionHandler bean name of the RejectionHandler for this listener */
        public void setRejectionHandler(String rejectionHandler) {
            this.rejectionHandler = rejectionHandler;
        }

        /** @return bean name of the Executor whose threads run this listener's handlers */
        public String getHandlerExecutor() {
            return handlerExecutor;
        }

        /** @param handlerExecutor bean name of the Executor whose threads run this listener's handlers */
        public void setHandlerExecutor(String handlerExecutor) {
            this.handlerExecutor = handlerExecutor;
        }

        /** @return bean name of the transaction manager for a transactional listener */
        public String getTransactionManager() {
            return transactionManager;
        }

        /** @param transactionManager bean name of the transaction manager for a transactional listener */
        public void setTransactionManager(String transactionManager) {
            this.transactionManager = transactionManager;
        }

        /**
         * @return scope of the listener's idempotency keys, used as it is (default: the address, or the address and
         *     a token per consumer for a topic subscription, prefixed with acemq.consumer.scope-prefix)
         */
        public String getScope() {
            return scope;
        }

        /**
         * @param scope scope of the listener's idempotency keys, used as it is (default: the address, or the address
         *     and a token per consumer for a topic subscription, prefixed with acemq.consumer.scope-prefix)
         */
        public void setScope(String scope) {
            this.scope = scope;
        }

        /**
         * @return SpEL expression computing each message's idempotency key from headers, payload, messageId and
         *     envelope, e.g. "payload.orderId" or "headers['orderId']" (default: the message-id). Not with
         *     key-property
         */
        public String getKey() {
            return key;
        }

        /**
         * @param key SpEL expression computing each message's idempotency key from headers, payload, messageId and
         *     envelope, e.g. "payload.orderId" or "headers['orderId']" (default: the message-id). Not with
         *     key-property
         */
        public void setKey(String key) {
            this.key = key;
        }

        /**
         * @return application property holding each message's idempotency key, e.g. orderId (default: the message-id)
         */
        public String getKeyProperty() {
            return keyProperty;
        }

        /**
         * @param keyProperty application property holding each message's idempotency key, e.g. orderId (default: the
         *     message-id)
         */
        public void setKeyProperty(String keyProperty) {
            this.keyProperty = keyProperty;
        }

        /** @return BODY (default): a copy whose key is known with another body is a conflict; OFF: no check */
        public String getFingerprint() {
            return fingerprint;
        }

        /**
         * @param fingerprint BODY (default): a copy whose key is known with another body is a conflict; OFF: no check
         */
        public void setFingerprint(String fingerprint) {
            this.fingerprint = fingerprint;
        }

        /** @return application properties hashed with the body into the fingerprint, in order */
        public List<String> getFingerprintProperties() {
            return fingerprintProperties;
        }

        /** @param fingerprintProperties application properties hashed with the body into the fingerprint, in order */
        public void setFingerprintProperties(List<String> fingerprintProperties) {
            this.fingerprintProperties = fingerprintProperties;
        }

        /** @return ACCEPT (default): a conflicting copy is settled as a copy and counted; REJECT: it is rejected */
        public Fingerprint.Action getOnConflict() {
            return onConflict;
        }

        /**
         * @param onConflict ACCEPT (default): a conflicting copy is settled as a copy and counted; REJECT: it is
         *     rejected
         */
        public void setOnConflict(Fingerprint.Action onConflict) {
            this.onConflict = onConflict;
        }

        /** @return "group-id" or a SpEL expression to order processing by, or null */
        public String getOrderBy() {
            return orderBy;
        }

        /** @param orderBy "group-id" or a SpEL expression to order processing by */
        public void setOrderBy(String orderBy) {
            this.orderBy = orderBy;
        }

        /** @return the application property to order processing by, or null */
        public String getOrderByProperty() {
            return orderByProperty;
        }

        /** @param orderByProperty the application property to order processing by */
        public void setOrderByProperty(String orderByProperty) {
            this.orderByProperty = orderByProperty;
        }

        /** @return ordered listeners: messages of one key that hold a place in the window */
        public Integer getKeyBacklog() {
            return keyBacklog;
        }

        /** @param keyBacklog ordered listeners: messages of one key that hold a place in the window */
        public void setKeyBacklog(Integer keyBacklog) {
            this.keyBacklog = keyBacklog;
        }

        /** @return ordered listeners: messages of busy keys parked beyond the window before intake stops */
        public Integer getParkedLimit() {
            return parkedLimit;
        }

        /** @param parkedLimit ordered listeners: messages of busy keys parked beyond the window before intake stops */
        public void setParkedLimit(Integer parkedLimit) {
            this.parkedLimit = parkedLimit;
        }

        /** @return ordered listeners: what parked messages may weigh before intake stops */
        public DataSize getParkedBytes() {
            return parkedBytes;
        }

        /** @param parkedBytes ordered listeners: what parked messages may weigh before intake stops */
        public void setParkedBytes(DataSize parkedBytes) {
            this.parkedBytes = parkedBytes;
        }

        /** @return whether the listener takes messages a batch at a time */
        public Boolean getBatch() {
            return batch;
        }

        /** @param batch whether the listener takes messages a batch at a time */
        public void setBatch(Boolean batch) {
            this.batch = batch;
        }

        /** @return batch listeners: the most messages per call */
        public Integer getBatchSize() {
            return batchSize;
        }

        /** @param batchSize batch listeners: the most messages per call */
        public void setBatchSize(Integer batchSize) {
            this.batchSize = batchSize;
        }

        /** @return batch listeners: how long a batch waits to fill */
        public Duration getBatchTime() {
            return batchTime;
        }

        /** @param batchTime batch listeners: how long a batch waits to fill */
        public void setBatchTime(Duration batchTime) {
            this.batchTime = batchTime;
        }
    }

    /**
     * {@code acemq.listeners.<name>.retry-backoff.*}: the runtime's {@code RetryBackoff}. A field left unset takes the
     * runtime default's value (100ms doubling to 10s, jitter 0.5); {@code first: 0} turns holding off.
     */
    public static class RetryBackoff {
        /** Delay after the first failed attempt (runtime default 100ms; 0: no holding). */
        private Duration first;
        /** Longest delay (runtime default 10s). */
        private Duration max;
        /** Growth per attempt, at least 1 (runtime default 2.0). */
        private Double multiplier;
        /** Largest fraction taken off a delay at random, 0 to 1 (runtime default 0.5). */
        private Double jitter;

        /** @return delay after the first failed attempt (runtime default 100ms; 0: no holding) */
        public Duration getFirst() {
            return first;
        }

        /** @param first delay after the first failed attempt (runtime default 100ms; 0: no holding) */
        public void setFirst(Duration first) {
            this.first = first;
        }

        /** @return longest delay (runtime default 10s) */
        public Duration getMax() {
            return max;
        }

        /** @param max longest delay (runtime default 10s) */
        public void setMax(Duration max) {
            this.max = max;
        }

        /** @return growth per attempt, at least 1 (runtime default 2.0) */
        public Double getMultiplier() {
            return multiplier;
        }

        /** @param multiplier growth per attempt, at least 1 (runtime default 2.0) */
        public void setMultiplier(Double multiplier) {
            this.multiplier = multiplier;
        }

        /** @return largest fraction taken off a delay at random, 0 to 1 (runtime default 0.5) */
        public Double getJitter() {
            return jitter;
        }

        /** @param jitter largest fraction taken off a delay at random, 0 to 1 (runtime default 0.5) */
        public void setJitter(Double jitter) {
            this.jitter = jitter;
        }
    }
}

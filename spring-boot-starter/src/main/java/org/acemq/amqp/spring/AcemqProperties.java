package org.acemq.amqp.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.springframework.boot.context.properties.ConfigurationProperties;

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

    /** Where and how to connect to the broker. */
    private final Connection connection = new Connection();
    /** The consumer that runs every listener. */
    private final Consumer consumer = new Consumer();
    /** The idempotency store. */
    private final Store store = new Store();
    /** Per-listener settings, keyed by the listener's name (its address unless it names itself). */
    private final Map<String, Listener> listeners = new LinkedHashMap<>();

    public Connection getConnection() {
        return connection;
    }

    public Consumer getConsumer() {
        return consumer;
    }

    public Store getStore() {
        return store;
    }

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
        /** TLS. */
        private final Tls tls = new Tls();
        /** Reconnection after a lost connection. */
        private final Reconnect reconnect = new Reconnect();

        public String getHost() {
            return host;
        }

        public void setHost(String host) {
            this.host = host;
        }

        public int getPort() {
            return port;
        }

        public void setPort(int port) {
            this.port = port;
        }

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public String getVirtualHost() {
            return virtualHost;
        }

        public void setVirtualHost(String virtualHost) {
            this.virtualHost = virtualHost;
        }

        public List<String> getFailover() {
            return failover;
        }

        public void setFailover(List<String> failover) {
            this.failover = failover;
        }

        public Duration getIdleTimeout() {
            return idleTimeout;
        }

        public void setIdleTimeout(Duration idleTimeout) {
            this.idleTimeout = idleTimeout;
        }

        public Duration getOpenTimeout() {
            return openTimeout;
        }

        public void setOpenTimeout(Duration openTimeout) {
            this.openTimeout = openTimeout;
        }

        public Duration getRequestTimeout() {
            return requestTimeout;
        }

        public void setRequestTimeout(Duration requestTimeout) {
            this.requestTimeout = requestTimeout;
        }

        public Tls getTls() {
            return tls;
        }

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

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getBundle() {
            return bundle;
        }

        public void setBundle(String bundle) {
            this.bundle = bundle;
        }

        public String getTrustStore() {
            return trustStore;
        }

        public void setTrustStore(String trustStore) {
            this.trustStore = trustStore;
        }

        public String getTrustStorePassword() {
            return trustStorePassword;
        }

        public void setTrustStorePassword(String trustStorePassword) {
            this.trustStorePassword = trustStorePassword;
        }

        public String getKeyStore() {
            return keyStore;
        }

        public void setKeyStore(String keyStore) {
            this.keyStore = keyStore;
        }

        public String getKeyStorePassword() {
            return keyStorePassword;
        }

        public void setKeyStorePassword(String keyStorePassword) {
            this.keyStorePassword = keyStorePassword;
        }

        public boolean isVerifyHost() {
            return verifyHost;
        }

        public void setVerifyHost(boolean verifyHost) {
            this.verifyHost = verifyHost;
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

        public Boolean getEnabled() {
            return enabled;
        }

        public void setEnabled(Boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getInitialDelay() {
            return initialDelay;
        }

        public void setInitialDelay(Duration initialDelay) {
            this.initialDelay = initialDelay;
        }

        public Duration getMaxDelay() {
            return maxDelay;
        }

        public void setMaxDelay(Duration maxDelay) {
            this.maxDelay = maxDelay;
        }

        public Integer getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(Integer maxAttempts) {
            this.maxAttempts = maxAttempts;
        }
    }

    /** {@code acemq.consumer.*}: the consumer that runs every listener. */
    public static class Consumer {
        /** Whether the consumer starts with the application context; false leaves it to the application. */
        private boolean autoStartup = true;
        /** Name for threads and logs (runtime default "acemq"). */
        private String name;
        /** FAIL_CLOSED (default): release and pause while the store is down; FAIL_OPEN: process without de-duplication. */
        private StoreFailurePolicy storeFailurePolicy;
        /** How long stopping waits for running handlers (runtime default 30s). */
        private Duration shutdownTimeout;
        /** Idle time after which a link with outstanding credit is drained and re-granted (runtime default 1s). */
        private Duration creditCheckInterval;
        /** How long to keep retrying a confirm after the handler succeeded (runtime default 30s). */
        private Duration confirmTimeout;
        /** First delay between probes of an unreachable store (runtime default 100ms). */
        private Duration storeRetryDelay;
        /** Longest delay between probes of an unreachable store (runtime default 10s). */
        private Duration maxStoreRetryDelay;
        /** Deliveries held by all listeners together, 0 for no cap (runtime default 0). */
        private Integer maxInFlightPerConnection;

        public boolean isAutoStartup() {
            return autoStartup;
        }

        public void setAutoStartup(boolean autoStartup) {
            this.autoStartup = autoStartup;
        }

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }

        public StoreFailurePolicy getStoreFailurePolicy() {
            return storeFailurePolicy;
        }

        public void setStoreFailurePolicy(StoreFailurePolicy storeFailurePolicy) {
            this.storeFailurePolicy = storeFailurePolicy;
        }

        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }

        public Duration getCreditCheckInterval() {
            return creditCheckInterval;
        }

        public void setCreditCheckInterval(Duration creditCheckInterval) {
            this.creditCheckInterval = creditCheckInterval;
        }

        public Duration getConfirmTimeout() {
            return confirmTimeout;
        }

        public void setConfirmTimeout(Duration confirmTimeout) {
            this.confirmTimeout = confirmTimeout;
        }

        public Duration getStoreRetryDelay() {
            return storeRetryDelay;
        }

        public void setStoreRetryDelay(Duration storeRetryDelay) {
            this.storeRetryDelay = storeRetryDelay;
        }

        public Duration getMaxStoreRetryDelay() {
            return maxStoreRetryDelay;
        }

        public void setMaxStoreRetryDelay(Duration maxStoreRetryDelay) {
            this.maxStoreRetryDelay = maxStoreRetryDelay;
        }

        public Integer getMaxInFlightPerConnection() {
            return maxInFlightPerConnection;
        }

        public void setMaxInFlightPerConnection(Integer maxInFlightPerConnection) {
            this.maxInFlightPerConnection = maxInFlightPerConnection;
        }
    }

    /** The values of {@code acemq.store.type}. */
    public enum StoreType {
        /** {@code InMemoryIdempotencyStore}: per process, forgotten on restart. */
        MEMORY,
        /** {@code JdbcIdempotencyStore} on PostgreSQL, on the application's DataSource. */
        JDBC
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

        public StoreType getType() {
            return type;
        }

        public void setType(StoreType type) {
            this.type = type;
        }

        public Duration getLease() {
            return lease;
        }

        public void setLease(Duration lease) {
            this.lease = lease;
        }

        public Duration getRetention() {
            return retention;
        }

        public void setRetention(Duration retention) {
            this.retention = retention;
        }

        public Memory getMemory() {
            return memory;
        }

        public Jdbc getJdbc() {
            return jdbc;
        }
    }

    /** {@code acemq.store.memory.*}. */
    public static class Memory {
        /** Most ids remembered (store default 1000000). */
        private Long maxEntries;

        public Long getMaxEntries() {
            return maxEntries;
        }

        public void setMaxEntries(Long maxEntries) {
            this.maxEntries = maxEntries;
        }
    }

    /** {@code acemq.store.jdbc.*}. */
    public static class Jdbc {
        /** Table name, "name" or "schema.name" (store default acemq_idempotency). */
        private String tableName;
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

        public String getTableName() {
            return tableName;
        }

        public void setTableName(String tableName) {
            this.tableName = tableName;
        }

        public boolean isInitializeSchema() {
            return initializeSchema;
        }

        public void setInitializeSchema(boolean initializeSchema) {
            this.initializeSchema = initializeSchema;
        }

        public UUID getOwner() {
            return owner;
        }

        public void setOwner(UUID owner) {
            this.owner = owner;
        }

        public Integer getPurgeBatchSize() {
            return purgeBatchSize;
        }

        public void setPurgeBatchSize(Integer purgeBatchSize) {
            this.purgeBatchSize = purgeBatchSize;
        }

        public Duration getPurgePause() {
            return purgePause;
        }

        public void setPurgePause(Duration purgePause) {
            this.purgePause = purgePause;
        }

        public Duration getPurgeInterval() {
            return purgeInterval;
        }

        public void setPurgeInterval(Duration purgeInterval) {
            this.purgeInterval = purgeInterval;
        }

        public GroupCommit getGroupCommit() {
            return groupCommit;
        }
    }

    /** {@code acemq.store.jdbc.group-commit.*}. */
    public static class GroupCommit {
        /** Whether group commit is on (store default off). */
        private boolean enabled;
        /** Most calls per batch statement (store default 128). */
        private Integer maxBatch;
        /** Most batch statements executing at once (store default 2). */
        private Integer maxInFlight;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Integer getMaxBatch() {
            return maxBatch;
        }

        public void setMaxBatch(Integer maxBatch) {
            this.maxBatch = maxBatch;
        }

        public Integer getMaxInFlight() {
            return maxInFlight;
        }

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
        /** MODIFIED (default) or RELEASED. */
        private Outcome transientFailureOutcome;
        /** How long a failed delivery is held before it goes back (runtime default 0). */
        private Duration retryDelay;
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
        /** Whether the handler and the store's confirm run in one database transaction. */
        private Boolean transactional;
        /** Bean name of the transaction manager for a transactional listener. */
        private String transactionManager;

        public String getAddress() {
            return address;
        }

        public void setAddress(String address) {
            this.address = address;
        }

        public Integer getConcurrency() {
            return concurrency;
        }

        public void setConcurrency(Integer concurrency) {
            this.concurrency = concurrency;
        }

        public Integer getPrefetch() {
            return prefetch;
        }

        public void setPrefetch(Integer prefetch) {
            this.prefetch = prefetch;
        }

        public AcknowledgementMode getAcknowledgementMode() {
            return acknowledgementMode;
        }

        public void setAcknowledgementMode(AcknowledgementMode acknowledgementMode) {
            this.acknowledgementMode = acknowledgementMode;
        }

        public Integer getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(Integer maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public List<Class<? extends Throwable>> getPermanentFailures() {
            return permanentFailures;
        }

        public void setPermanentFailures(List<Class<? extends Throwable>> permanentFailures) {
            this.permanentFailures = permanentFailures;
        }

        public Outcome getTransientFailureOutcome() {
            return transientFailureOutcome;
        }

        public void setTransientFailureOutcome(Outcome transientFailureOutcome) {
            this.transientFailureOutcome = transientFailureOutcome;
        }

        public Duration getRetryDelay() {
            return retryDelay;
        }

        public void setRetryDelay(Duration retryDelay) {
            this.retryDelay = retryDelay;
        }

        public Duration getInProgressDelay() {
            return inProgressDelay;
        }

        public void setInProgressDelay(Duration inProgressDelay) {
            this.inProgressDelay = inProgressDelay;
        }

        public MissingIdPolicy.Kind getMissingIdPolicy() {
            return missingIdPolicy;
        }

        public void setMissingIdPolicy(MissingIdPolicy.Kind missingIdPolicy) {
            this.missingIdPolicy = missingIdPolicy;
        }

        public String getMissingIdProperty() {
            return missingIdProperty;
        }

        public void setMissingIdProperty(String missingIdProperty) {
            this.missingIdProperty = missingIdProperty;
        }

        public String getSessionGroup() {
            return sessionGroup;
        }

        public void setSessionGroup(String sessionGroup) {
            this.sessionGroup = sessionGroup;
        }

        public String getLinkName() {
            return linkName;
        }

        public void setLinkName(String linkName) {
            this.linkName = linkName;
        }

        public Integer getTransactionBatchSize() {
            return transactionBatchSize;
        }

        public void setTransactionBatchSize(Integer transactionBatchSize) {
            this.transactionBatchSize = transactionBatchSize;
        }

        public Duration getTransactionBatchTime() {
            return transactionBatchTime;
        }

        public void setTransactionBatchTime(Duration transactionBatchTime) {
            this.transactionBatchTime = transactionBatchTime;
        }

        public Boolean getRenewLeases() {
            return renewLeases;
        }

        public void setRenewLeases(Boolean renewLeases) {
            this.renewLeases = renewLeases;
        }

        public Boolean getTransactional() {
            return transactional;
        }

        public void setTransactional(Boolean transactional) {
            this.transactional = transactional;
        }

        public String getTransactionManager() {
            return transactionManager;
        }

        public void setTransactionManager(String transactionManager) {
            this.transactionManager = transactionManager;
        }
    }
}

package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.mockito.Mockito.RETURNS_SELF;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.mockingDetails;
import static org.mockito.Mockito.when;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import javax.net.ssl.SSLContext;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.AccessToken;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.SaslMechanism;
import org.acemq.amqp.consumer.SourceCapability;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.TokenCredential;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqProperties;
import org.junit.jupiter.api.Test;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundles;

/**
 * Every public setter of the runtime's builders is reachable from {@code acemq.*} properties or
 * {@code @AcemqListener} attributes. The runtime grows settings; when one is added and the starter does not map it,
 * this test names it. Each test sets every property (or attribute) to a non-default value, applies them to a mock
 * builder and compares the methods called with the builder's public methods, less a short, justified exclusion list.
 */
class SettingsCoverageTest {

    /** Subscription.Builder methods the starter does not take from properties or attributes, and why. */
    static final Map<String, String> SUBSCRIPTION_EXCLUSIONS = Map.of(
            "build", "terminal operation, called by the container");

    /** AmqpConsumer.Builder methods not taken from acemq.consumer.*, and why. */
    static final Map<String, String> CONSUMER_EXCLUSIONS = Map.of(
            "start", "terminal operation: the container starts the consumer (SmartLifecycle)",
            "connection", "the container passes ConnectionSettings built from acemq.connection.* (covered below)",
            "broker", "shorthand for connection(...)",
            "store", "the IdempotencyStore bean (acemq.store.* or the application's own)",
            "subscribe", "one Subscription per @AcemqListener (covered above)",
            "observer", "the Micrometer binding, or an AcemqConsumerCustomizer for another observer",
            "ticker", "a code-level extension point (tests, simulated time): an AcemqConsumerCustomizer sets it",
            "scheduler", "a code-level extension point (an application's own executor): an AcemqConsumerCustomizer sets it");

    /** ConnectionSettings.Builder methods not taken from acemq.connection.*, and why. */
    static final Map<String, String> CONNECTION_EXCLUSIONS = Map.of(
            "build", "terminal operation");

    /** The handler executor bean the fixtures name ("handlers"). */
    static final java.util.concurrent.Executor HANDLERS = Runnable::run;

    /** The rejection handler bean the fixtures name. */
    static final RejectionHandler PARKING = r -> RejectionHandler.Decision.ACCEPT;

    /** A bean factory with one RejectionHandler bean, "parking", and no default. */
    static final ListenerSettings.ListenerBeans BEANS = new ListenerSettings.ListenerBeans() {
        @Override
        public <T> T named(String beanName, Class<T> type) {
            Object bean = beanName.equals("handlers") ? HANDLERS : beanName.equals("parking") ? PARKING : null;
            return type.isInstance(bean) ? type.cast(bean) : null;
        }

        @Override
        public RejectionHandler fallback() {
            return null;
        }
    };

    static Set<String> publicSetters(Class<?> builder) {
        return Arrays.stream(builder.getMethods())
                .filter(m -> m.getDeclaringClass() == builder && !Modifier.isStatic(m.getModifiers()))
                .map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    static Set<String> called(Object mock) {
        return mockingDetails(mock).getInvocations().stream()
                .map(i -> i.getMethod().getName())
                .collect(Collectors.toCollection(TreeSet::new));
    }

    static AcemqProperties.Listener everyListenerProperty() {
        AcemqProperties.Listener p = new AcemqProperties.Listener();
        p.setAddress("orders");
        p.setConnection("billing");
        p.setConcurrency(7);
        p.setPrefetch(3);
        p.setAcknowledgementMode(AcknowledgementMode.AT_MOST_ONCE);
        p.setMaxAttempts(9);
        p.setPermanentFailures(List.of(IllegalArgumentException.class));
        p.setTransientFailureOutcome(Outcome.RELEASED);
        p.getRetryBackoff().setFirst(Duration.ofMillis(250));
        p.getRetryBackoff().setMax(Duration.ofSeconds(20));
        p.getRetryBackoff().setMultiplier(3.0);
        p.getRetryBackoff().setJitter(0.25);
        p.setSourceCapability(SourceCapability.TOPIC);
        p.setInProgressDelay(Duration.ofMillis(750));
        p.setMissingIdPolicy(MissingIdPolicy.Kind.APPLICATION_PROPERTY);
        p.setMissingIdProperty("orderId");
        p.setSessionGroup("group-1");
        p.setLinkName("link-1");
        p.setTransactionBatchSize(17);
        p.setTransactionBatchTime(Duration.ofMillis(70));
        p.setRenewLeases(false);
        p.setAutoStartup(true);
        p.setIdleEventInterval(Duration.ofSeconds(40));
        p.setScope("orders-scope");
        p.setKey("headers['orderId']");
        p.setFingerprintProperties(List.of("tenant", "region"));
        p.setOnConflict(Fingerprint.Action.REJECT);
        p.setRejectionHandler("parking");
        p.setHandlerExecutor("handlers");
        p.setOrderBy("headers['accountId']");
        p.setKeyBacklog(6);
        p.setParkedLimit(50);
        p.setParkedBytes(org.springframework.util.unit.DataSize.ofMegabytes(8));
        return p;
    }

    /**
     * The settings only a batch listener takes (a batch subscription is not ordered, so they cannot be set beside
     * {@link #everyListenerProperty()}'s orderBy).
     */
    static AcemqProperties.Listener everyBatchProperty() {
        AcemqProperties.Listener p = new AcemqProperties.Listener();
        p.setAddress("readings");
        p.setPrefetch(40);
        p.setBatch(true);
        p.setBatchSize(20);
        p.setBatchTime(Duration.ofMillis(300));
        return p;
    }

    @Test
    void everySubscriptionBuilderSetterIsReachableFromProperties() {
        Subscription.Builder b = mock(Subscription.Builder.class, RETURNS_SELF);
        new ListenerSettings("orders", "test", Map.of(), List.of(), everyListenerProperty()).beans(BEANS)
                .applyTo(b);
        new ListenerSettings("readings", "test", Map.of(), List.of(), everyBatchProperty()).applyTo(b);

        Set<String> missing = publicSetters(Subscription.Builder.class);
        missing.removeAll(SUBSCRIPTION_EXCLUSIONS.keySet());
        missing.removeAll(called(b));
        assertThat(missing).as("Subscription.Builder setters with no acemq.listeners.<name>.* property").isEmpty();
    }

    @Test
    void everySubscriptionBuilderSetterIsReachableFromAnnotationAttributes() throws Exception {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(new EveryAttribute(), "everyAttribute");
        ListenerEndpoint endpoint = processor.endpoints().get(0);
        Set<String> unset = new TreeSet<>(ListenerAnnotationProcessor.STRING_ATTRIBUTES);
        unset.removeAll(endpoint.attributes().keySet());
        assertThat(unset).as("the fixture sets every attribute but key, which excludes keyProperty, orderBy, which "
                + "excludes orderByProperty, the deprecated transactional, which excludes databaseTransaction, and the "
                + "batch settings, which exclude ordering").containsExactly("batch", "batchSize", "batchTime", "key",
                "orderBy", "transactional");
        ListenerAnnotationProcessor batchProcessor = new ListenerAnnotationProcessor();
        batchProcessor.postProcessAfterInitialization(new EveryBatchAttribute(), "everyBatchAttribute");
        ListenerEndpoint batchEndpoint = batchProcessor.endpoints().get(0);
        assertThat(batchEndpoint.attributes()).containsKeys("batch", "batchSize", "batchTime");

        Subscription.Builder b = mock(Subscription.Builder.class, RETURNS_SELF);
        new ListenerSettings("orders", "test", endpoint.attributes(), endpoint.permanentFailures(),
                new AcemqProperties.Listener()).beans(BEANS).applyTo(b);
        new ListenerSettings("readings", "test", batchEndpoint.attributes(), batchEndpoint.permanentFailures(),
                new AcemqProperties.Listener()).applyTo(b);

        Set<String> missing = publicSetters(Subscription.Builder.class);
        missing.removeAll(SUBSCRIPTION_EXCLUSIONS.keySet());
        missing.removeAll(called(b));
        assertThat(missing).as("Subscription.Builder setters with no @AcemqListener attribute").isEmpty();
    }

    @Test
    void propertiesReachTheSubscriptionWithTheirValues() {
        MessageHandler handler = e -> { };
        ListenerSettings s = new ListenerSettings("orders-name", "test", Map.of(), List.of(),
                everyListenerProperty()).beans(BEANS);
        Subscription sub = s.applyTo(Subscription.builder(s.address(), handler)).build();

        assertThat(sub.name()).isEqualTo("orders-name");
        assertThat(sub.address()).isEqualTo("orders");
        assertThat(s.connection()).isEqualTo("billing");
        assertThat(sub.concurrency()).isEqualTo(7);
        assertThat(sub.prefetch()).isEqualTo(3);
        assertThat(sub.acknowledgementMode()).isEqualTo(AcknowledgementMode.AT_MOST_ONCE);
        assertThat(sub.maxAttempts()).isEqualTo(9);
        assertThat(sub.permanentFailures()).containsExactly(IllegalArgumentException.class);
        assertThat(sub.transientFailureOutcome()).contains(Outcome.RELEASED);
        assertThat(sub.retryBackoff()).isEqualTo(RetryBackoff.of(Duration.ofMillis(250), Duration.ofSeconds(20), 3.0,
                0.25));
        assertThat(sub.sourceCapability()).isEqualTo(SourceCapability.TOPIC);
        assertThat(sub.inProgressDelay()).isEqualTo(Duration.ofMillis(750));
        assertThat(sub.missingIdPolicy()).isEqualTo(MissingIdPolicy.applicationProperty("orderId"));
        assertThat(sub.sessionGroup()).isEqualTo("group-1");
        assertThat(sub.linkName()).isEqualTo("link-1");
        assertThat(sub.transactionBatchSize()).isEqualTo(17);
        assertThat(sub.transactionBatchTime()).isEqualTo(Duration.ofMillis(70));
        assertThat(sub.renewLeases()).isFalse();
        assertThat(sub.scope()).contains("orders-scope");
        assertThat(sub.keySource().kind()).isEqualTo(KeySource.Kind.FUNCTION);
        assertThat(sub.keySource().name()).isEqualTo("headers['orderId']");
        assertThat(sub.keySource().function().apply(new TestEnvelope("unused", 1, "{}", Map.of("orderId", "o-7"))))
                .isEqualTo("o-7");
        assertThat(sub.fingerprint()).isEqualTo(Fingerprint.body().withProperties("tenant", "region")
                .onConflict(Fingerprint.Action.REJECT));
        assertThat(sub.rejectionHandler()).containsSame(PARKING);
        assertThat(sub.orderBy()).hasValueSatisfying(k -> {
            assertThat(k.kind()).isEqualTo(KeySource.Kind.FUNCTION);
            assertThat(k.name()).isEqualTo("headers['accountId']");
            assertThat(k.function().apply(new TestEnvelope("unused", 1, "{}", Map.of("accountId", "a-9"))))
                    .isEqualTo("a-9");
        });
        assertThat(sub.keyBacklog()).isEqualTo(6);
        assertThat(sub.parkedLimit()).isEqualTo(50);
        assertThat(sub.parkedBytes()).isEqualTo(8L * 1024 * 1024);
    }

    @Test
    void batchPropertiesReachABatchSubscriptionWithTheirValues() {
        ListenerSettings s = new ListenerSettings("readings", "test", Map.of(), List.of(), everyBatchProperty());
        assertThat(s.batch()).isTrue();
        Subscription sub = s.buildBatch(batch -> { });
        assertThat(sub.batchHandler()).isPresent();
        assertThat(sub.batchSize()).isEqualTo(20);
        assertThat(sub.batchTime()).isEqualTo(Duration.ofMillis(300));
        assertThat(sub.prefetch()).isEqualTo(40);
    }

    @Test
    void attributesReachTheSubscriptionWithTheirValues() {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(new EveryAttribute(), "everyAttribute");
        ListenerEndpoint endpoint = processor.endpoints().get(0);
        ListenerSettings s = new ListenerSettings("orders-name", "test", endpoint.attributes(),
                endpoint.permanentFailures(), new AcemqProperties.Listener()).beans(BEANS);
        Subscription sub = s.applyTo(Subscription.builder(s.address(), e -> { })).build();

        assertThat(sub.address()).isEqualTo("orders-q");
        assertThat(s.connection()).isEqualTo("billing-a");
        assertThat(sub.concurrency()).isEqualTo(2);
        assertThat(sub.prefetch()).isEqualTo(0);
        assertThat(sub.acknowledgementMode()).isEqualTo(AcknowledgementMode.AT_MOST_ONCE);
        assertThat(sub.sessionGroup()).isEqualTo("g");
        assertThat(sub.maxAttempts()).isEqualTo(3);
        assertThat(sub.permanentFailures()).containsExactly(UnsupportedOperationException.class);
        assertThat(sub.transientFailureOutcome()).contains(Outcome.RELEASED);
        assertThat(sub.retryBackoff()).isEqualTo(RetryBackoff.of(Duration.ofMillis(100), Duration.ofSeconds(5), 1.5,
                0.0));
        assertThat(sub.sourceCapability()).isEqualTo(SourceCapability.NONE);
        assertThat(sub.inProgressDelay()).isEqualTo(Duration.ofSeconds(2));
        assertThat(sub.missingIdPolicy()).isEqualTo(MissingIdPolicy.bodyHash());
        assertThat(sub.linkName()).isEqualTo("link-a");
        assertThat(sub.transactionBatchSize()).isEqualTo(5);
        assertThat(sub.transactionBatchTime()).isEqualTo(Duration.ofMillis(20));
        assertThat(sub.renewLeases()).isFalse();
        assertThat(s.databaseTransaction()).isTrue();
        assertThat(sub.rejectionHandler()).containsSame(PARKING);
        assertThat(s.transactionManager()).isEqualTo("txManager");
        assertThat(sub.scope()).contains("orders-scope");
        assertThat(sub.keySource()).isEqualTo(KeySource.applicationProperty("orderId"));
        assertThat(sub.fingerprint()).isEqualTo(Fingerprint.body().withProperties("tenant", "region")
                .onConflict(Fingerprint.Action.REJECT));
        assertThat(sub.orderBy()).contains(KeySource.applicationProperty("accountId"));
        assertThat(sub.keyBacklog()).isEqualTo(2);
        assertThat(sub.parkedLimit()).isEqualTo(10);
        assertThat(sub.parkedBytes()).isEqualTo(512L * 1024);
        assertThat(sub.batchHandler()).isEmpty();

        ListenerAnnotationProcessor batchProcessor = new ListenerAnnotationProcessor();
        batchProcessor.postProcessAfterInitialization(new EveryBatchAttribute(), "everyBatchAttribute");
        ListenerEndpoint batchEndpoint = batchProcessor.endpoints().get(0);
        ListenerSettings batch = new ListenerSettings("readings", "test", batchEndpoint.attributes(),
                batchEndpoint.permanentFailures(), new AcemqProperties.Listener());
        assertThat(batch.batch()).isTrue();
        Subscription batchSub = batch.buildBatch(b -> { });
        assertThat(batchSub.batchSize()).isEqualTo(5);
        assertThat(batchSub.batchTime()).isEqualTo(Duration.ofMillis(50));
    }

    @Test
    void everyConsumerBuilderSetterIsReachableFromProperties() {
        AcemqProperties.Consumer p = new AcemqProperties.Consumer();
        p.setName("billing");
        p.setStoreFailurePolicy(StoreFailurePolicy.FAIL_OPEN);
        p.setShutdownTimeout(Duration.ofSeconds(3));
        p.setCreditCheckInterval(Duration.ofSeconds(4));
        p.setConfirmTimeout(Duration.ofSeconds(5));
        p.setStoreRetryDelay(Duration.ofMillis(6));
        p.setMaxStoreRetryDelay(Duration.ofSeconds(7));
        p.setMaxInFlightPerConnection(8);
        p.setOutboxSweepInterval(Duration.ofSeconds(20));
        p.setOutboxSweepMinAge(Duration.ofMinutes(2));
        p.setOutboxMaxAge(Duration.ofMinutes(10));
        p.setFailFastStart(true);
        p.setScopePrefix("billing-svc");
        AmqpConsumer.Builder b = mock(AmqpConsumer.Builder.class, RETURNS_SELF);
        ConsumerSettings.applyTo(p, b);

        Set<String> missing = publicSetters(AmqpConsumer.Builder.class);
        missing.removeAll(CONSUMER_EXCLUSIONS.keySet());
        missing.removeAll(called(b));
        assertThat(missing).as("AmqpConsumer.Builder setters with no acemq.consumer.* property").isEmpty();
    }

    @Test
    void everyConnectionBuilderSetterIsReachableFromProperties() throws Exception {
        AcemqProperties.Connection p = everyConnectionProperty();
        SslBundles bundles = mock(SslBundles.class);
        SslBundle bundle = mock(SslBundle.class);
        when(bundles.getBundle("amqp")).thenReturn(bundle);
        when(bundle.createSslContext()).thenReturn(SSLContext.getDefault());
        ConnectionSettings.Builder b = mock(ConnectionSettings.Builder.class, RETURNS_SELF);
        p.getToken().setCredential("tokens"); // with the password too: the mock refuses neither
        ConsumerSettings.applyTo(p, bundles, name -> name.equals("tokens") ? TOKENS : null, b);

        Set<String> missing = publicSetters(ConnectionSettings.Builder.class);
        missing.removeAll(CONNECTION_EXCLUSIONS.keySet());
        missing.removeAll(called(b));
        assertThat(missing).as("ConnectionSettings.Builder setters with no acemq.connection.* property").isEmpty();
    }

    @Test
    void connectionPropertiesReachTheSettingsWithTheirValues() {
        AcemqProperties.Connection p = everyConnectionProperty();
        p.getTls().setBundle(null);
        ConnectionSettings s = ConsumerSettings.connection(p, null);

        assertThat(s.host()).isEqualTo("broker.example");
        assertThat(s.port()).isEqualTo(5671);
        assertThat(s.user()).isEqualTo("app");
        assertThat(s.password()).isEqualTo("secret");
        assertThat(s.virtualHost()).isEqualTo("vhost");
        assertThat(s.tls()).isTrue();
        assertThat(s.trustStorePath()).isEqualTo("/trust.p12");
        assertThat(s.keyStorePath()).isEqualTo("/key.p12");
        assertThat(s.verifyHost()).isFalse();
        assertThat(s.reconnect()).isFalse();
        assertThat(s.reconnectDelay()).isEqualTo(Duration.ofMillis(200));
        assertThat(s.maxReconnectDelay()).isEqualTo(Duration.ofSeconds(20));
        assertThat(s.maxReconnectAttempts()).isEqualTo(3);
        assertThat(s.failoverLocations()).containsExactly("b2:5672", "b3:5673");
        assertThat(s.idleTimeout()).isEqualTo(Duration.ofSeconds(11));
        assertThat(s.openTimeout()).isEqualTo(Duration.ofSeconds(12));
        assertThat(s.requestTimeout()).isEqualTo(Duration.ofSeconds(13));
        assertThat(s.trustStoreType()).isEqualTo("JKS");
        assertThat(s.keyStoreType()).isEqualTo("PKCS12");
        assertThat(s.keyAlias()).isEqualTo("client");
        assertThat(s.enabledProtocols()).containsExactly("TLSv1.3");
        assertThat(s.enabledCipherSuites()).containsExactly("TLS_AES_128_GCM_SHA256");
        assertThat(s.saslMechanisms()).containsExactly(SaslMechanism.PLAIN);
        assertThat(s.tokenRefreshBefore()).isEqualTo(Duration.ofSeconds(45));
        assertThat(s.maxFrameSize()).isEqualTo(16384);
    }

    /** A token credential bean. */
    static final TokenCredential TOKENS = () -> AccessToken.withoutExpiry("t");

    @Test
    void theTokenCredentialIsTheBeanTheTokenPropertyNames() {
        AcemqProperties.Connection p = new AcemqProperties.Connection();
        p.setUsername("app");
        p.getToken().setCredential("tokens");
        p.getToken().setRefreshBefore(Duration.ofSeconds(20));
        ConnectionSettings s = ConsumerSettings.connection(p, null, name -> name.equals("tokens") ? TOKENS : null,
                "acemq.connection");
        assertThat(s.tokenCredential()).isSameAs(TOKENS);
        assertThat(s.user()).isEqualTo("app");
        assertThat(s.password()).isNull();
        assertThat(s.tokenRefreshBefore()).isEqualTo(Duration.ofSeconds(20));

        p.getToken().setCredential("other");
        assertThatThrownBy(() -> ConsumerSettings.connection(p, null, name -> null, "acemq.connection"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("acemq.connection: token.credential names 'other', which is not a bean of type "
                        + TokenCredential.class.getName());
        p.getToken().setCredential("tokens");
        p.setUsername(null);
        assertThatThrownBy(() -> ConsumerSettings.connection(p, null, name -> TOKENS, "acemq.connection"))
                .hasMessageStartingWith("acemq.connection: token.credential is set, but no username");
        p.setUsername("app");
        p.setPassword("secret");
        assertThatThrownBy(() -> ConsumerSettings.connection(p, null, name -> TOKENS, "acemq.connection"))
                .hasMessage("acemq.connection: credentials and tokenCredential are both set: authenticate with one "
                        + "of them");
    }

    @Test
    void namedConnectionsTakeEveryConnectionPropertyAndTheDefaultIsAcemqConnection() {
        AcemqProperties properties = new AcemqProperties();
        properties.getConnection().setHost("default-host");
        AcemqProperties.Connection billing = everyConnectionProperty();
        billing.getTls().setBundle(null);
        properties.getConnections().put("billing", billing);

        ConnectionSettings s = ConsumerSettings.connection(properties, "billing", null);
        assertThat(s).as("acemq.connections.<name>.* is an AcemqProperties.Connection: the same keys, the same "
                + "mapping as acemq.connection.*").usingRecursiveComparison()
                .isEqualTo(ConsumerSettings.connection(billing, null));
        assertThat(s.host()).isEqualTo("broker.example");
        assertThat(s.idleTimeout()).isEqualTo(Duration.ofSeconds(11));
        assertThat(ConsumerSettings.connection(properties, "default", null).host()).isEqualTo("default-host");
        assertThat(ConsumerSettings.connectionNames(properties)).containsExactly("default", "billing");

        billing.setFailover(List.of("no-port"));
        assertThatThrownBy(() -> ConsumerSettings.connection(properties, "billing", null))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("acemq.connections.billing: failover entries must be host:port");
        assertThatThrownBy(() -> ConsumerSettings.connection(properties, "other", null))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("no AceMQ connection is named 'other'");
    }

    @Test
    void theConsumerOfANamedConnectionIsNamedAfterIt() {
        AcemqProperties.Consumer p = new AcemqProperties.Consumer();
        AmqpConsumer.Builder b = mock(AmqpConsumer.Builder.class, RETURNS_SELF);
        ConsumerSettings.applyTo(p, "billing", b);
        org.mockito.Mockito.verify(b).name("acemq-billing");
        p.setName("svc");
        AmqpConsumer.Builder named = mock(AmqpConsumer.Builder.class, RETURNS_SELF);
        ConsumerSettings.applyTo(p, "billing", named);
        org.mockito.Mockito.verify(named).name("svc-billing");
        AmqpConsumer.Builder byDefault = mock(AmqpConsumer.Builder.class, RETURNS_SELF);
        ConsumerSettings.applyTo(p, "default", byDefault);
        org.mockito.Mockito.verify(byDefault).name("svc");
    }

    static AcemqProperties.Connection everyConnectionProperty() {
        AcemqProperties.Connection p = new AcemqProperties.Connection();
        p.setHost("broker.example");
        p.setPort(5671);
        p.setUsername("app");
        p.setPassword("secret");
        p.setVirtualHost("vhost");
        p.getTls().setEnabled(true);
        p.getTls().setBundle("amqp");
        p.getTls().setTrustStore("/trust.p12");
        p.getTls().setTrustStorePassword("tp");
        p.getTls().setKeyStore("/key.p12");
        p.getTls().setKeyStorePassword("kp");
        p.getTls().setVerifyHost(false);
        p.getTls().setTrustStoreType("JKS");
        p.getTls().setKeyStoreType("PKCS12");
        p.getTls().setKeyAlias("client");
        p.getTls().setProtocols(List.of("TLSv1.3"));
        p.getTls().setCipherSuites(List.of("TLS_AES_128_GCM_SHA256"));
        p.getSasl().setMechanisms(List.of(SaslMechanism.PLAIN));
        p.getToken().setRefreshBefore(Duration.ofSeconds(45));
        p.getReconnect().setEnabled(false);
        p.getReconnect().setInitialDelay(Duration.ofMillis(200));
        p.getReconnect().setMaxDelay(Duration.ofSeconds(20));
        p.getReconnect().setMaxAttempts(3);
        p.setFailover(List.of("b2:5672", "b3:5673"));
        p.setIdleTimeout(Duration.ofSeconds(11));
        p.setOpenTimeout(Duration.ofSeconds(12));
        p.setRequestTimeout(Duration.ofSeconds(13));
        p.setMaxFrameSize(16384);
        return p;
    }

    /** Sets every attribute of @AcemqListener. */
    static class EveryAttribute {
        @AcemqListener(address = "orders-q", connection = "billing-a", name = "orders-name", concurrency = "2",
                prefetch = "0",
                acknowledgementMode = "at-most-once", maxAttempts = "3",
                permanentFailure = UnsupportedOperationException.class, transientFailureOutcome = "RELEASED",
                retryBackoffFirst = "100ms", retryBackoffMax = "5s", retryBackoffMultiplier = "1.5",
                retryBackoffJitter = "0", sourceCapability = "none", inProgressDelay = "2s", missingIdPolicy = "body-hash",
                missingIdProperty = "unused-with-body-hash", sessionGroup = "g", linkName = "link-a",
                transactionBatchSize = "5", transactionBatchTime = "20ms", renewLeases = "false",
                id = "orders-id", autoStartup = "true", idleEventInterval = "1m",
                databaseTransaction = "true", transactionManager = "txManager", scope = "orders-scope",
                rejectionHandler = "parking", handlerExecutor = "handlers",
                keyProperty = "orderId", fingerprint = "body", fingerprintProperties = "tenant, region",
                onConflict = "reject", orderByProperty = "accountId", keyBacklog = "2", parkedLimit = "10",
                parkedBytes = "512KB")
        void onMessage(String body) {
        }
    }

    /** Sets the attributes of a batch listener. */
    static class EveryBatchAttribute {
        @AcemqListener(address = "readings-q", batch = "true", batchSize = "5", batchTime = "50ms")
        void onBatch(List<String> bodies) {
        }
    }

    // ------------------------------------------------------------------ ordering and batches

    static class OrderedByGroup {
        @AcemqListener(address = "q", orderBy = "group-id", concurrency = "4")
        void onMessage(String body) {
        }
    }

    static class OrderedByExpression {
        @AcemqListener(address = "q", orderBy = "payload['account']")
        void onMessage(Map<String, Object> body) {
        }
    }

    static class OrderedTwice {
        @AcemqListener(address = "q", orderBy = "group-id", orderByProperty = "accountId")
        void onMessage(String body) {
        }
    }

    static class BatchSizeWithoutBatch {
        @AcemqListener(address = "q", batchSize = "10")
        void onMessage(String body) {
        }
    }

    static class OrderedBatch {
        @AcemqListener(address = "q", batch = "true", orderBy = "group-id")
        void onMessage(List<String> bodies) {
        }
    }

    @Test
    void orderByIsTheGroupIdAPropertyOrAnExpressionAndPropertiesReplaceTheAnnotations() {
        assertThat(settingsOf(new OrderedByGroup(), new AcemqProperties.Listener()).build(e -> { }).orderBy())
                .contains(KeySource.groupId());
        Subscription byExpression = settingsOf(new OrderedByExpression(), new AcemqProperties.Listener())
                .payload(Envelope::body).build(e -> { });
        assertThat(byExpression.orderBy().orElseThrow().function()
                .apply(new TestEnvelope("unused", 1, Map.of("account", "acc-1")))).isEqualTo("acc-1");

        AcemqProperties.Listener byProperty = new AcemqProperties.Listener();
        byProperty.setOrderByProperty("tenant");
        assertThat(settingsOf(new OrderedByGroup(), byProperty).build(e -> { }).orderBy())
                .as("a property replaces the annotation's orderBy").contains(KeySource.applicationProperty("tenant"));
        AcemqProperties.Listener byGroup = new AcemqProperties.Listener();
        byGroup.setOrderBy("GROUP-ID");
        assertThat(settingsOf(new OrderedByExpression(), byGroup).build(e -> { }).orderBy())
                .contains(KeySource.groupId());
    }

    @Test
    void contradictoryOrderingAndBatchSettingsFailNamingTheListenerAndTheSettings() {
        assertThatThrownBy(() -> settingsOf(new OrderedTwice(), new AcemqProperties.Listener()).build(e -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): orderBy and orderByProperty must not both be set, "
                        + "but were 'group-id' and 'accountId'");
        assertThatThrownBy(() -> settingsOf(new BatchSizeWithoutBatch(), new AcemqProperties.Listener())
                .build(e -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): batchSize and batchTime apply to batch listeners "
                        + "only (batch = \"true\", acemq.listeners.q.batch=true), but batch is not set and batchSize "
                        + "is 10");
        assertThatThrownBy(() -> settingsOf(new OrderedBatch(), new AcemqProperties.Listener())
                .buildBatch(b -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("AceMQ listener 'q' (Bean.onMessage): orderBy must not be set on a batch "
                        + "subscription");
        AcemqProperties.Listener notABoolean = new AcemqProperties.Listener();
        assertThatThrownBy(() -> settingsOf(new BadBatchFlag(), notABoolean).batch())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): batch must be true or false, but was 'yes'");
        AcemqProperties.Listener badExpression = new AcemqProperties.Listener();
        badExpression.setOrderBy("payload..x");
        assertThatThrownBy(() -> settingsOf(new OrderedByGroup(), badExpression).build(e -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("AceMQ listener 'q' (Bean.onMessage): orderBy must be a SpEL expression");
    }

    @Test
    void aParkedBytesValueThatIsNoDataSizeOrIsNegativeFailsNamingTheSetting() {
        assertThatThrownBy(() -> settingsOf(new BadParkedBytes(), new AcemqProperties.Listener()).build(e -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): parkedBytes must be a data size such as 64MB, 512KB "
                        + "or a number of bytes, but was 'lots'");
        AcemqProperties.Listener negative = new AcemqProperties.Listener();
        negative.setParkedBytes(org.springframework.util.unit.DataSize.ofBytes(-1));
        assertThatThrownBy(() -> settingsOf(new OrderedByGroup(), negative).build(e -> { }))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): parkedBytes must be >= 0, but was -1");
    }

    static class BadParkedBytes {
        @AcemqListener(address = "q", orderBy = "group-id", parkedBytes = "lots")
        void onMessage(String body) {
        }
    }

    static class BadBatchFlag {
        @AcemqListener(address = "q", batch = "yes")
        void onMessage(List<String> bodies) {
        }
    }

    @Test
    void theKeyExpressionAttributeReachesTheSubscription() {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(new KeyAttribute(), "keyAttribute");
        ListenerEndpoint endpoint = processor.endpoints().get(0);
        Subscription.Builder b = mock(Subscription.Builder.class, RETURNS_SELF);
        new ListenerSettings("keyed", "test", endpoint.attributes(), endpoint.permanentFailures(),
                new AcemqProperties.Listener()).applyTo(b);
        assertThat(called(b)).contains("key");

        Subscription sub = new ListenerSettings("keyed", "test", endpoint.attributes(), endpoint.permanentFailures(),
                new AcemqProperties.Listener()).build(e -> { });
        assertThat(sub.keySource().name()).isEqualTo("messageId + '/' + headers['line']");
        assertThat(sub.keySource().function().apply(new TestEnvelope("unused", 1, "{}", Map.of("line", 3L))))
                .isEqualTo("unused/3");
    }

    static class KeyAttribute {
        @AcemqListener(address = "keyed-q", key = "messageId + '/' + headers['line']")
        void onMessage(String body) {
        }
    }

    // ------------------------------------------------------------------ databaseTransaction and its former name

    static class FormerName {
        @SuppressWarnings("deprecation")
        @AcemqListener(address = "q", transactional = "true")
        void onMessage(String body) {
        }
    }

    static class BothNames {
        @SuppressWarnings("deprecation")
        @AcemqListener(address = "q", transactional = "true", databaseTransaction = "false")
        void onMessage(String body) {
        }
    }

    static ListenerSettings settingsOf(Object bean, AcemqProperties.Listener properties) {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(bean, "bean");
        ListenerEndpoint endpoint = processor.endpoints().get(0);
        return new ListenerSettings("q", "Bean.onMessage", endpoint.attributes(), endpoint.permanentFailures(),
                properties);
    }

    @Test
    @SuppressWarnings("deprecation")
    void theDeprecatedTransactionalStillMeansADatabaseTransactionAndSettingBothNamesFails() {
        assertThat(settingsOf(new FormerName(), new AcemqProperties.Listener()).databaseTransaction()).isTrue();
        AcemqProperties.Listener former = new AcemqProperties.Listener();
        former.setTransactional(true);
        assertThat(settingsOf(new KeyAttribute(), former).databaseTransaction()).isTrue();
        AcemqProperties.Listener current = new AcemqProperties.Listener();
        current.setDatabaseTransaction(false);
        assertThat(settingsOf(new FormerName(), current).databaseTransaction())
                .as("the property wins over the attribute, whichever name").isFalse();

        assertThatThrownBy(() -> settingsOf(new BothNames(), new AcemqProperties.Listener()).databaseTransaction())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): sets both databaseTransaction and transactional, its "
                        + "deprecated former name; keep databaseTransaction only");
        AcemqProperties.Listener both = new AcemqProperties.Listener();
        both.setTransactional(true);
        both.setDatabaseTransaction(true);
        assertThatThrownBy(() -> settingsOf(new KeyAttribute(), both).databaseTransaction())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("acemq.listeners.q.database-transaction and .transactional, its deprecated former "
                        + "name, are both set");
    }

    // ------------------------------------------------------------------ the Redis store

    /** RedisIdempotencyStore.Builder methods not taken from acemq.store.*, and why. */
    static final Map<String, String> REDIS_STORE_EXCLUSIONS = Map.of(
            "build", "terminal operation: AcemqRedisStoreConfiguration builds the store");

    @Test
    void everyRedisStoreBuilderSetterIsReachableFromProperties() {
        AcemqProperties.Store p = new AcemqProperties.Store();
        p.setType(AcemqProperties.StoreType.REDIS);
        p.setLease(Duration.ofSeconds(11));
        p.setRetention(Duration.ofHours(3));
        p.getRedis().setKeyPrefix("orders:");
        p.getRedis().setTimeout(Duration.ofSeconds(2));
        p.getRedis().setOwner("owner-1");
        org.acemq.amqp.store.redis.RedisIdempotencyStore.Builder b =
                mock(org.acemq.amqp.store.redis.RedisIdempotencyStore.Builder.class, RETURNS_SELF);
        RedisStores.applyTo(b, p);
        Set<String> expected = publicSetters(org.acemq.amqp.store.redis.RedisIdempotencyStore.Builder.class);
        expected.removeAll(REDIS_STORE_EXCLUSIONS.keySet());
        assertThat(called(b)).isEqualTo(expected);
    }

    // ------------------------------------------------------------------ rejection handler

    @Test
    void aListenerWithoutRejectionHandlerGetsTheApplicationsDefaultAndAnUnknownBeanNameFails() {
        RejectionHandler fallback = r -> RejectionHandler.Decision.REJECT;
        ListenerSettings.ListenerBeans withDefault = new ListenerSettings.ListenerBeans() {
            @Override
            public <T> T named(String beanName, Class<T> type) {
                return BEANS.named(beanName, type);
            }

            @Override
            public RejectionHandler fallback() {
                return fallback;
            }
        };
        assertThat(settingsOf(new KeyAttribute(), new AcemqProperties.Listener()).beans(withDefault)
                .build(e -> { }).rejectionHandler()).containsSame(fallback);
        assertThat(settingsOf(new KeyAttribute(), new AcemqProperties.Listener()).beans(BEANS)
                .build(e -> { }).rejectionHandler()).as("no bean: rejections proceed").isEmpty();
        AcemqProperties.Listener named = new AcemqProperties.Listener();
        named.setRejectionHandler("parking");
        assertThat(settingsOf(new KeyAttribute(), named).beans(withDefault).build(e -> { })
                .rejectionHandler()).as("the named bean wins over the default").containsSame(PARKING);
        AcemqProperties.Listener unknown = new AcemqProperties.Listener();
        unknown.setRejectionHandler("nope");
        assertThatThrownBy(() -> settingsOf(new KeyAttribute(), unknown).beans(withDefault)
                .build(e -> { })).isInstanceOf(IllegalStateException.class)
                .hasMessage("AceMQ listener 'q' (Bean.onMessage): rejectionHandler names 'nope', which is not a bean "
                        + "of type org.acemq.amqp.consumer.RejectionHandler");
    }
}

package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.expression.spel.SpelEvaluationException;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/**
 * The auto-configuration without a broker: the consumer is not started ({@code acemq.consumer.auto-startup=false}),
 * so everything up to the built subscriptions can be checked in milliseconds.
 */
class AcemqAutoConfigurationTest {

    final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AcemqAutoConfiguration.class))
            .withPropertyValues("acemq.consumer.auto-startup=false");

    static List<Subscription> subscriptions(org.springframework.context.ApplicationContext context) {
        return ((ListenerContainer) context.getBean(AcemqListenerContainer.class)).subscriptions();
    }

    record Order(String orderId, int quantity) {
    }

    @Configuration(proxyBeanMethods = false)
    static class Listeners {
        @Bean
        OrderListener orderListener() {
            return new OrderListener();
        }
    }

    static class OrderListener {
        @AcemqListener(address = "${orders.queue}", concurrency = "#{2 * 2}", maxAttempts = "3")
        void onOrder(Order order, Envelope envelope) {
        }
    }

    @Test
    void attributesResolvePlaceholdersAndExpressions() {
        runner.withUserConfiguration(Listeners.class).withPropertyValues("orders.queue=orders.v2").run(context -> {
            assertThat(context).hasNotFailed();
            Subscription s = subscriptions(context).get(0);
            assertThat(s.address()).isEqualTo("orders.v2");
            assertThat(s.name()).as("named after its address").isEqualTo("orders.v2");
            assertThat(s.concurrency()).isEqualTo(4);
            assertThat(s.maxAttempts()).isEqualTo(3);
            assertThat(context.getBean(AcemqListenerContainer.class).isRunning()).isFalse();
        });
    }

    @Test
    void propertiesWinOverAttributes() {
        runner.withUserConfiguration(Listeners.class)
                .withPropertyValues("orders.queue=orders", "acemq.listeners.orders.concurrency=6",
                        "acemq.listeners.orders.retry-backoff.first=250ms", "acemq.listeners.orders.acknowledgement-mode=transactional",
                        "acemq.listeners.orders.permanent-failures=java.lang.IllegalArgumentException")
                .run(context -> {
                    Subscription s = subscriptions(context).get(0);
                    assertThat(s.concurrency()).isEqualTo(6);
                    assertThat(s.maxAttempts()).as("attribute kept where no property").isEqualTo(3);
                    assertThat(s.retryBackoff().first()).isEqualTo(Duration.ofMillis(250));
                    assertThat(s.retryBackoff().max()).as("default max kept").isEqualTo(RetryBackoff.DEFAULT.max());
                    assertThat(s.acknowledgementMode().name()).isEqualTo("TRANSACTIONAL");
                    assertThat(s.isPermanent(new IllegalArgumentException())).isTrue();
                });
    }

    @Test
    void aPropertyKeyThatNamesNoListenerFailsTheContextNamingIt() {
        runner.withUserConfiguration(Listeners.class)
                .withPropertyValues("orders.queue=orders", "acemq.listeners.ordrs.concurrency=6")
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("acemq.listeners.ordrs configures no @AcemqListener")
                        .hasMessageContaining("[orders]"));
    }

    @Test
    void anInvalidAttributeFailsTheContextNamingListenerSettingAndValue() {
        runner.withUserConfiguration(Listeners.class)
                .withPropertyValues("orders.queue=orders", "acemq.listeners.orders.max-attempts=0")
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("AceMQ listener 'orders' (OrderListener.onOrder): "
                                + "maxAttempts must be >= 1, but was 0"));
    }

    @Test
    void theDefaultStoreIsInMemoryWithTheStoreProperties() {
        runner.withPropertyValues("acemq.store.lease=5s", "acemq.store.retention=2h",
                "acemq.store.memory.max-entries=1000").run(context -> {
                    InMemoryIdempotencyStore store = context.getBean(InMemoryIdempotencyStore.class);
                    assertThat(store.leaseDuration()).isEqualTo(Duration.ofSeconds(5));
                    assertThat(store.retention()).isEqualTo(Duration.ofHours(2));
                    assertThat(store.maxEntries()).isEqualTo(1000);
                });
    }

    @Test
    void anApplicationStoreBeanWins() {
        runner.withBean("myStore", IdempotencyStore.class, () -> InMemoryIdempotencyStore.builder()
                .lease(Duration.ofSeconds(7)).build()).run(context -> {
                    assertThat(context).hasSingleBean(IdempotencyStore.class);
                    assertThat(context).hasBean("myStore");
                });
    }

    @Test
    void theJdbcStoreWithoutADataSourceFailsSayingWhatIsMissing() {
        runner.withPropertyValues("acemq.store.type=jdbc").run(context -> assertThat(context).getFailure()
                .hasStackTraceContaining("acemq.store.type=jdbc needs a DataSource bean"));
    }

    @Test
    void aTransactionalListenerOnTheMemoryStoreFailsAtStartup() {
        runner.withUserConfiguration(Listeners.class)
                .withPropertyValues("orders.queue=orders", "acemq.listeners.orders.database-transaction=true")
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("has databaseTransaction, which needs the JDBC store"));
    }

    @Test
    void theApplicationsRejectionHandlerBeanIsPickedUpAndAListenerCanNameAnother() {
        RejectionHandler parking = r -> RejectionHandler.Decision.ACCEPT;
        RejectionHandler audit = r -> RejectionHandler.Decision.REJECT;
        runner.withUserConfiguration(Listeners.class).withPropertyValues("orders.queue=orders")
                .run(context -> assertThat(subscriptions(context).get(0).rejectionHandler())
                        .as("no bean: rejections proceed as decided").isEmpty());
        runner.withUserConfiguration(Listeners.class).withBean("parking", RejectionHandler.class, () -> parking)
                .withPropertyValues("orders.queue=orders")
                .run(context -> assertThat(subscriptions(context).get(0).rejectionHandler()).containsSame(parking));
        runner.withUserConfiguration(Listeners.class).withBean("parking", RejectionHandler.class, () -> parking)
                .withBean("audit", RejectionHandler.class, () -> audit)
                .withPropertyValues("orders.queue=orders", "acemq.listeners.orders.rejection-handler=audit")
                .run(context -> assertThat(subscriptions(context).get(0).rejectionHandler()).containsSame(audit));
        runner.withUserConfiguration(Listeners.class).withBean("parking", RejectionHandler.class, () -> parking)
                .withBean("audit", RejectionHandler.class, () -> audit)
                .withPropertyValues("orders.queue=orders")
                .run(context -> assertThat(context).getFailure().hasStackTraceContaining("several "
                        + "org.acemq.amqp.consumer.RejectionHandler beans and none is @Primary"));
    }

    @Test
    void theHealthContributorIsThereAndUnknownUntilStarted() {
        runner.run(context -> {
            HealthIndicator health = context.getBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN,
                    HealthIndicator.class);
            assertThat(health.health().getStatus()).isEqualTo(Status.UNKNOWN);
            assertThat(health.health().getDetails()).containsEntry("state", "NOT_STARTED");
        });
        runner.withPropertyValues("management.health.acemq.enabled=false").run(context ->
                assertThat(context).doesNotHaveBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN));
    }

    @Test
    void withoutMicrometerAndActuatorTheContextStillStarts() {
        runner.withClassLoader(new FilteredClassLoader("io.micrometer.", "org.springframework.boot.health.",
                        "org.springframework.boot.actuate."))
                .withUserConfiguration(Listeners.class).withPropertyValues("orders.queue=orders")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(ListenerContainer.ObserverBinding.class);
                    assertThat(context).doesNotHaveBean(AcemqAutoConfiguration.HEALTH_INDICATOR_BEAN);
                    assertThat(subscriptions(context)).hasSize(1);
                });
    }

    static ListenerEndpoint endpointOf(Object bean) {
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(bean, "l");
        return processor.endpoints().get(0);
    }

    static ListenerMethods withoutBeans() {
        return new ListenerMethods(new org.springframework.beans.factory.support.DefaultListableBeanFactory(),
                List::of);
    }

    @Test
    void jsonBodiesAreReadWithTheApplicationsMapper() {
        runner.withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
                .withBean(JsonMapper.class, () -> JsonMapper.builder()
                        .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE).build())
                .run(context -> {
                    ListenerMethod method = context.getBean(ListenerMethods.class)
                            .create(endpointOf(new OrderListener()));
                    Object order = method.payload(new TestEnvelope("s:1", 1,
                            "{\"order_id\":\"o-1\",\"quantity\":2}"));
                    assertThat(order).isEqualTo(new Order("o-1", 2));
                });
    }

    static class BodyTypes {
        final Map<String, Object> received = new java.util.concurrent.ConcurrentHashMap<>();

        @AcemqListener(address = "text")
        void onText(String body) {
            received.put("text", body);
        }

        @AcemqListener(address = "bytes")
        void onBytes(byte[] body) {
            received.put("bytes", body);
        }

        @AcemqListener(address = "map")
        void onMap(Map<String, Object> body) {
            received.put("map", body);
        }

        @AcemqListener(address = "number")
        void onNumber(Long body) {
            received.put("number", body);
        }
    }

    @Test
    void theDefaultConvertersHandleStringsBytesAndTheBodysOwnType() throws Exception {
        BodyTypes bean = new BodyTypes();
        ListenerAnnotationProcessor processor = new ListenerAnnotationProcessor();
        processor.postProcessAfterInitialization(bean, "l");
        ListenerMethods methods = withoutBeans();
        Map<String, ListenerMethod> byAddress = new java.util.HashMap<>();
        processor.endpoints().forEach(e -> byAddress.put(e.attributes().get("address"), methods.create(e)));
        byAddress.get("text").handle(new TestEnvelope("s:1", 1,
                "héllo".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        byAddress.get("bytes").handle(new TestEnvelope("s:1", 1, "abc"));
        byAddress.get("map").handle(new TestEnvelope("s:1", 1, Map.of("k", 1L)));
        byAddress.get("number").handle(new TestEnvelope("s:1", 1, 42L));
        assertThat(bean.received.get("text")).isEqualTo("héllo");
        assertThat((byte[]) bean.received.get("bytes")).containsExactly('a', 'b', 'c');
        assertThat(bean.received.get("map")).isEqualTo(Map.of("k", 1L));
        assertThat(bean.received.get("number")).isEqualTo(42L);
    }

    @Test
    void anUnconvertibleBodyIsRejectedAsADecodeError() throws Exception {
        ListenerMethod method = withoutBeans().create(endpointOf(new OrderListener()));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> method.handle(new TestEnvelope("s:1", 1,
                        "not json")))
                .isInstanceOfSatisfying(PermanentMessageException.class,
                        e -> assertThat(e.condition()).isEqualTo("amqp:decode-error"))
                .hasMessageContaining("cannot be converted to " + Order.class.getTypeName());
    }

    @Test
    void theConfigurationMetadataDescribesEveryProperty() throws Exception {
        Map<?, ?> metadata;
        try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).as("generated by spring-boot-configuration-processor").isNotNull();
            metadata = new tools.jackson.databind.ObjectMapper().readValue(in, Map.class);
        }
        Set<String> names = new TreeSet<>();
        for (Object p : (List<?>) metadata.get("properties")) {
            Map<?, ?> property = (Map<?, ?>) p;
            names.add((String) property.get("name"));
            assertThat((String) property.get("description")).as("description of " + property.get("name"))
                    .isNotBlank();
        }
        assertThat(names).contains("acemq.connection.host", "acemq.connection.tls.bundle",
                "acemq.connection.reconnect.max-attempts", "acemq.consumer.auto-startup",
                "acemq.consumer.shutdown-timeout", "acemq.store.type", "acemq.store.jdbc.initialize-schema",
                "acemq.store.jdbc.group-commit.enabled", "acemq.listeners", "acemq.consumer.scope-prefix");
    }

    // ------------------------------------------------------------------------------ keys, scopes, fingerprints

    static class KeyedListener {
        @AcemqListener(address = "orders", key = "payload.orderId", scope = "${orders.scope:}",
                fingerprintProperties = "tenant", onConflict = "${orders.on-conflict:}")
        void onOrder(Order order) {
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class KeyedListeners {
        @Bean
        KeyedListener keyedListener() {
            return new KeyedListener();
        }
    }

    static Object keyOf(Subscription s, Object body, Map<String, Object> properties) {
        return s.keySource().function().apply(new TestEnvelope("s:m-1", 1, body, properties));
    }

    @Test
    void aKeyExpressionReadsThePayloadAsTheMethodReceivesIt() {
        runner.withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
                .withUserConfiguration(KeyedListeners.class).run(context -> {
                    Subscription s = subscriptions(context).get(0);
                    assertThat(s.keySource().kind()).isEqualTo(KeySource.Kind.FUNCTION);
                    assertThat(s.keySource().name()).isEqualTo("payload.orderId");
                    assertThat(keyOf(s, "{\"orderId\":\"o-1\",\"quantity\":2}", Map.of())).isEqualTo("o-1");
                    assertThat(keyOf(s, "{\"quantity\":2}", Map.of())).as("no orderId: no key").isNull();
                    assertThatThrownBy(() -> keyOf(s, "not json", Map.of())).as("the runtime logs it: no key")
                            .isInstanceOf(KeyExpression.UnreadablePayload.class)
                            .hasMessageContaining("the payload cannot be read for the key expression");
                    assertThat(s.fingerprint()).isEqualTo(Fingerprint.body().withProperties("tenant"));
                    assertThat(s.scope()).as("default scope: derived by the runtime").isEmpty();
                });
    }

    static class HeaderKeyListener {
        @AcemqListener(address = "orders", key = "headers['orderId']")
        void onOrder(Envelope envelope) {
        }

        @AcemqListener(address = "raw", key = "payload['orderId'] + '@' + envelope.address")
        void onRaw(Envelope envelope) {
        }

        @AcemqListener(address = "unsafe", key = "T(java.lang.System).getProperty('user.home')")
        void onUnsafe(Envelope envelope) {
        }

        @AcemqListener(address = "calls", key = "payload.toString()")
        void onCalls(String body) {
        }
    }

    @Test
    void aKeyExpressionReadsHeadersAndTheDecodedBodyButNothingElse() {
        runner.withBean(HeaderKeyListener.class).run(context -> {
            Map<String, Subscription> byName = new java.util.HashMap<>();
            subscriptions(context).forEach(s -> byName.put(s.name(), s));
            assertThat(keyOf(byName.get("orders"), "{}", Map.of("orderId", 42L))).isEqualTo(42L);
            assertThat(keyOf(byName.get("orders"), "{}", Map.of())).isNull();
            assertThat(keyOf(byName.get("raw"), Map.of("orderId", "o-9"), Map.of()))
                    .as("no body parameter: the decoded AMQP body").isEqualTo("o-9@test");
            assertThatThrownBy(() -> keyOf(byName.get("unsafe"), "{}", Map.of()))
                    .as("no type references").isInstanceOf(SpelEvaluationException.class);
            assertThatThrownBy(() -> keyOf(byName.get("calls"), "x", Map.of()))
                    .as("no method calls").isInstanceOf(SpelEvaluationException.class);
        });
    }

    static class BadKeyListener {
        @AcemqListener(address = "orders", key = "payload.(")
        void onOrder(Order order) {
        }
    }

    @Test
    void aKeyExpressionThatDoesNotParseFailsTheContextNamingTheListener() {
        runner.withBean(BadKeyListener.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining("AceMQ listener 'orders' (BadKeyListener.onOrder): key must be a SpEL "
                        + "expression such as payload.orderId or headers['orderId'], but 'payload.(' is not"));
    }

    @Test
    void keyScopeAndFingerprintPropertiesWinOverAttributes() {
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("orders.scope=from-attribute", "orders.on-conflict=reject",
                        "acemq.listeners.orders.key-property=orderId", "acemq.listeners.orders.scope=from-property",
                        "acemq.listeners.orders.on-conflict=accept",
                        "acemq.listeners.orders.fingerprint-properties=tenant,region")
                .run(context -> {
                    Subscription s = subscriptions(context).get(0);
                    assertThat(s.keySource()).as("key-property replaces the annotation's key expression")
                            .isEqualTo(KeySource.applicationProperty("orderId"));
                    assertThat(s.scope()).contains("from-property");
                    assertThat(s.fingerprint()).isEqualTo(Fingerprint.body().withProperties("tenant", "region")
                            .onConflict(Fingerprint.Action.ACCEPT));
                });
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("orders.scope=from-attribute", "orders.on-conflict=reject")
                .run(context -> {
                    Subscription s = subscriptions(context).get(0);
                    assertThat(s.scope()).contains("from-attribute");
                    assertThat(s.fingerprint().conflictAction()).isEqualTo(Fingerprint.Action.REJECT);
                });
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("orders.on-conflict=reject", "acemq.listeners.orders.fingerprint=off")
                .run(context -> assertThat(subscriptions(context).get(0).fingerprint())
                        .as("off in properties overrides the annotation's fingerprint settings")
                        .isEqualTo(Fingerprint.off()));
    }

    @Test
    void contradictoryKeyOrFingerprintSettingsFailTheContext() {
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("acemq.listeners.orders.key=headers['id']",
                        "acemq.listeners.orders.key-property=id")
                .run(context -> assertThat(context).getFailure().hasMessageContaining("AceMQ listener 'orders' "
                        + "(KeyedListener.onOrder): key and keyProperty must not both be set"));
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("acemq.listeners.orders.fingerprint=off",
                        "acemq.listeners.orders.on-conflict=reject")
                .run(context -> assertThat(context).getFailure().hasMessageContaining("AceMQ listener 'orders' "
                        + "(KeyedListener.onOrder): fingerprintProperties and onConflict must not be set when "
                        + "fingerprint is off"));
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("acemq.listeners.orders.fingerprint=hash")
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("fingerprint must be body or off, but was 'hash'"));
        runner.withUserConfiguration(KeyedListeners.class)
                .withPropertyValues("orders.scope=" + "s".repeat(201))
                .run(context -> assertThat(context).getFailure().hasMessageContaining("AceMQ listener 'orders' "
                        + "(KeyedListener.onOrder): scope must be non-blank, at most 200 characters"));
    }
}

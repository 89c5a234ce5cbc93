package org.acemq.amqp.spring.internal;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import javax.sql.DataSource;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.TokenCredential;
import org.acemq.amqp.consumer.micrometer.AcemqProcessObservationConvention;
import org.acemq.amqp.spring.AcemqConsumerCustomizer;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.acemq.amqp.spring.AcemqListenerRegistry;
import org.acemq.amqp.spring.AcemqProperties;
import org.acemq.amqp.spring.AcemqMessageConverterCustomizer;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.beans.factory.config.BeanDefinition;

/**
 * Auto-configuration of the AceMQ consumer: the {@code @AcemqListener} methods, the idempotency store, the
 * listener container, and the optional Micrometer, Actuator health and Spring transaction integrations (each active
 * only when its library is on the class path). Runs after the auto-configurations of the beans it uses, so that the
 * application's DataSource, migrations, MeterRegistry, ObservationRegistry and Jackson mapper exist first.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
        "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
        "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
        "org.springframework.boot.liquibase.autoconfigure.LiquibaseAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
        "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration",
        "org.springframework.boot.jackson2.autoconfigure.Jackson2AutoConfiguration",
        // the same auto-configurations on Boot 3.5, where they live in other packages (an absent name is ignored)
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
        "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
        "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration",
        "org.springframework.boot.autoconfigure.liquibase.LiquibaseAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration",
        "org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration"})
@EnableConfigurationProperties(AcemqProperties.class)
public final class AcemqAutoConfiguration {

    /** The bean name of the health contributor; Actuator reports it as {@code acemq}. */
    static final String HEALTH_INDICATOR_BEAN = "acemqHealthIndicator";

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static ListenerAnnotationProcessor acemqListenerAnnotationProcessor() {
        return new ListenerAnnotationProcessor();
    }

    @Bean
    ListenerMethods acemqListenerMethods(BeanFactory beans,
            ObjectProvider<AcemqMessageConverterCustomizer> converterCustomizers) {
        return new ListenerMethods(beans, () -> converterCustomizers.orderedStream().toList());
    }

    @Bean
    @ConditionalOnMissingBean(AcemqListenerRegistry.class)
    AcemqListenerRegistry acemqListenerRegistry(AcemqListenerContainer container) {
        if (container instanceof ListenerContainer own) {
            return own.registry();
        }
        return new AcemqListenerRegistry() {
            @Override
            public java.util.Set<String> listenerIds() {
                return java.util.Set.of();
            }

            @Override
            public org.acemq.amqp.spring.AcemqListenerHandle listener(String id) {
                throw new IllegalArgumentException("The application replaced the AcemqListenerContainer bean ("
                        + container.getClass().getName() + "); its listeners are not in the AcemqListenerRegistry");
            }
        };
    }

    @Bean
    @ConditionalOnMissingBean(AcemqListenerContainer.class)
    AcemqListenerContainer acemqListenerContainer(AcemqProperties properties, ListenerAnnotationProcessor listeners,
            ObjectProvider<IdempotencyStore> store, ListenerMethods methods, ObjectProvider<SslBundles> sslBundles,
            ObjectProvider<ListenerContainer.ObserverBinding> observer,
            ObjectProvider<ListenerContainer.TransactionalHandlers> transactional,
            ObjectProvider<AcemqConsumerCustomizer> customizers, ObjectProvider<RejectionHandler> rejectionHandlers,
            BeanFactory beans) {
        return new ListenerContainer(properties, listeners, store::getObject, methods,
                name -> ConsumerSettings.connection(properties, name, sslBundles.getIfAvailable(),
                        bean -> beans.containsBean(bean) && beans.isTypeMatch(bean, TokenCredential.class)
                                ? beans.getBean(bean, TokenCredential.class) : null),
                observer.getIfAvailable(), transactional.getIfAvailable(), customizers.orderedStream().toList(),
                listenerBeans(rejectionHandlers, beans));
    }

    /**
     * The application's beans a listener names: its {@link RejectionHandler} ({@code rejectionHandler}; listeners
     * that name none get the only (or primary) one, if any: several and no primary is then an error) and its
     * {@code handlerExecutor}.
     */
    static ListenerSettings.ListenerBeans listenerBeans(ObjectProvider<RejectionHandler> all,
            BeanFactory beans) {
        return new ListenerSettings.ListenerBeans() {
            @Override
            public <T> T named(String beanName, Class<T> type) {
                return beans.containsBean(beanName) && beans.isTypeMatch(beanName, type)
                        ? beans.getBean(beanName, type) : null;
            }

            @Override
            public RejectionHandler fallback() {
                RejectionHandler unique = all.getIfUnique();
                if (unique == null && all.stream().findAny().isPresent()) {
                    throw new IllegalStateException("The application has several " + RejectionHandler.class.getName()
                            + " beans and none is @Primary: mark one @Primary, or name one on each @AcemqListener "
                            + "(rejectionHandler) or in acemq.listeners.<name>.rejection-handler");
                }
                return unique;
            }
        };
    }

    /** {@code acemq.store.type=memory} (the default). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "acemq.store", name = "type", havingValue = "memory", matchIfMissing = true)
    static class MemoryStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(IdempotencyStore.class)
        InMemoryIdempotencyStore acemqIdempotencyStore(AcemqProperties properties) {
            AcemqProperties.Store p = properties.getStore();
            try {
                InMemoryIdempotencyStore.Builder b = InMemoryIdempotencyStore.builder();
                if (p.getLease() != null) {
                    b.lease(p.getLease());
                }
                if (p.getRetention() != null) {
                    b.retention(p.getRetention());
                }
                if (p.getMemory().getMaxEntries() != null) {
                    b.maxEntries(p.getMemory().getMaxEntries());
                }
                return b.build();
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("acemq.store: " + e.getMessage(), e);
            }
        }
    }

    /** {@code acemq.store.type=jdbc}: on the application's DataSource. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "acemq.store", name = "type", havingValue = "jdbc")
    static class JdbcStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(IdempotencyStore.class)
        @DependsOnDatabaseInitialization
        JdbcIdempotencyStore acemqIdempotencyStore(AcemqProperties properties, ObjectProvider<DataSource> dataSource) {
            DataSource ds = dataSource.getIfUnique();
            if (ds == null) {
                throw new IllegalStateException("acemq.store.type=jdbc needs a DataSource bean (spring.datasource.* "
                        + "with spring-boot-starter-jdbc and the PostgreSQL, MariaDB or H2 driver), but the application has "
                        + (dataSource.stream().findAny().isPresent() ? "several and none is @Primary" : "none"));
            }
            AcemqProperties.Store p = properties.getStore();
            AcemqProperties.Jdbc jdbc = p.getJdbc();
            JdbcIdempotencyStore store;
            try {
                JdbcIdempotencyStore.Builder b = JdbcIdempotencyStore.builder(ds);
                if (jdbc.getTableName() != null) {
                    b.tableName(jdbc.getTableName());
                }
                if (jdbc.getOutboxTableName() != null) {
                    b.outboxTableName(jdbc.getOutboxTableName());
                }
                if (jdbc.getDialect() != null) {
                    b.dialect(jdbc.getDialect());
                }
                if (p.getLease() != null) {
                    b.lease(p.getLease());
                }
                if (p.getRetention() != null) {
                    b.retention(p.getRetention());
                }
                if (jdbc.getOwner() != null) {
                    b.owner(jdbc.getOwner());
                }
                if (jdbc.getPurgeBatchSize() != null) {
                    b.purgeBatchSize(jdbc.getPurgeBatchSize());
                }
                if (jdbc.getPurgePause() != null) {
                    b.purgePause(jdbc.getPurgePause());
                }
                AcemqProperties.GroupCommit gc = jdbc.getGroupCommit();
                if (Boolean.FALSE.equals(gc.getEnabled())) {
                    b.groupCommit(false);
                } else if (gc.getMaxBatch() != null || gc.getMaxInFlight() != null) {
                    b.groupCommit(gc.getMaxBatch() != null ? gc.getMaxBatch()
                                    : JdbcIdempotencyStore.DEFAULT_GROUP_COMMIT_MAX_BATCH,
                            gc.getMaxInFlight() != null ? gc.getMaxInFlight()
                                    : JdbcIdempotencyStore.DEFAULT_GROUP_COMMIT_MAX_IN_FLIGHT);
                }
                store = b.build();
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("acemq.store: " + e.getMessage(), e);
            }
            if (jdbc.isInitializeSchema()) {
                store.createSchema();
            }
            return store;
        }

        @Bean
        @ConditionalOnBean(JdbcIdempotencyStore.class)
        JdbcStorePurger acemqJdbcStorePurger(JdbcIdempotencyStore store, AcemqProperties properties) {
            return new JdbcStorePurger(store, properties.getStore().getJdbc().getPurgeInterval());
        }
    }

    /** Meters and observations, when Micrometer is on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.micrometer.core.instrument.MeterRegistry",
            "io.micrometer.observation.ObservationRegistry"})
    static class MicrometerConfiguration {

        @Bean
        ListenerContainer.ObserverBinding acemqMicrometerBinding(ObjectProvider<MeterRegistry> meters,
                ObjectProvider<ObservationRegistry> observations,
                ObjectProvider<AcemqProcessObservationConvention> conventions) {
            return new MicrometerBinding(meters, observations, conventions);
        }
    }

    /** Transactional listeners, when spring-tx and spring-jdbc are on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.transaction.PlatformTransactionManager",
            "org.springframework.jdbc.datasource.ConnectionHolder"})
    static class TransactionConfiguration {

        @Bean
        ListenerContainer.TransactionalHandlers acemqTransactionalHandlers(BeanFactory beans) {
            return new SpringTransactionalHandlers(beans);
        }
    }

    /**
     * The {@code acemq} health contributor, when Spring Boot 4's health support is on the class path (Boot 3's is
     * registered by {@code acemq-spring-boot3-autoconfigure}).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    static class HealthConfiguration {

        /** Nested: its condition's class exists only when the outer condition holds. */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnEnabledHealthIndicator("acemq")
        static class EnabledHealthConfiguration {

            @Bean(name = HEALTH_INDICATOR_BEAN)
            @ConditionalOnMissingBean(name = HEALTH_INDICATOR_BEAN)
            HealthIndicator acemqHealthIndicator(AcemqListenerContainer container) {
                return new AcemqHealthIndicator(container);
            }
        }
    }
}

package org.acemq.amqp.spring.internal;

import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.spring.AcemqProperties;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * {@code acemq.store.type=redis}: a {@link RedisIdempotencyStore}, unless the application defines its own
 * {@link IdempotencyStore} bean. The client comes from {@code acemq.store.redis.uri} / {@code .cluster-nodes} when set
 * (a client of the starter's own, shut down with the context), else from the application's Spring Data Redis
 * {@code LettuceConnectionFactory} (its native client, which stays the factory's). Redis is never chosen unless the
 * type says so. Separate from {@link AcemqAutoConfiguration} because every type it names is optional: the store
 * module, Lettuce and Spring Data Redis are the application's choice.
 */
@AutoConfiguration(before = AcemqAutoConfiguration.class, afterName = {
        "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
        "org.springframework.boot.autoconfigure.data.redis.RedisAutoConfiguration"})
@ConditionalOnProperty(prefix = "acemq.store", name = "type", havingValue = "redis")
@EnableConfigurationProperties(AcemqProperties.class)
public final class AcemqRedisStoreConfiguration {

    static final String STORE_CLASS = "org.acemq.amqp.store.redis.RedisIdempotencyStore";
    static final String LETTUCE_FACTORY_CLASS =
            "org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory";

    /** The store module is on the class path. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {STORE_CLASS, "io.lettuce.core.RedisClient"})
    static class RedisStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(IdempotencyStore.class)
        RedisIdempotencyStore acemqIdempotencyStore(AcemqProperties properties, RedisStoreClient client) {
            return RedisStores.build(properties.getStore(), client);
        }

        /** Spring Data Redis is on the class path: its LettuceConnectionFactory bean, if any, gives the client. */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = LETTUCE_FACTORY_CLASS)
        static class WithSpringDataRedis {

            @Bean
            @ConditionalOnMissingBean(IdempotencyStore.class)
            RedisStoreClient acemqRedisStoreClient(AcemqProperties properties,
                    ObjectProvider<LettuceConnectionFactory> lettuce, ObjectProvider<RedisConnectionFactory> any) {
                return RedisStores.client(properties.getStore().getRedis(), () -> {
                    LettuceConnectionFactory factory = lettuce.getIfUnique();
                    if (factory != null) {
                        return fromFactory(factory);
                    }
                    if (lettuce.stream().findAny().isPresent()) {
                        throw new IllegalStateException("acemq.store.type=redis: the application has several "
                                + "LettuceConnectionFactory beans and none is @Primary; mark one @Primary or set "
                                + "acemq.store.redis.uri (or .cluster-nodes)");
                    }
                    RedisConnectionFactory other = any.getIfUnique();
                    throw new IllegalStateException("acemq.store.type=redis needs acemq.store.redis.uri (or "
                            + ".cluster-nodes) or a Spring Data Redis LettuceConnectionFactory bean, but the application "
                            + "has " + (other == null ? "neither"
                                    : "a " + other.getClass().getName() + ", which is not Lettuce's"));
                });
            }

            /**
             * The factory's native client (a RedisClient for a standalone or Sentinel configuration, a
             * RedisClusterClient for a cluster one), started first if the factory is not yet (it starts at once unless
             * its early start-up is turned off).
             */
            static RedisStoreClient fromFactory(LettuceConnectionFactory factory) {
                if (!factory.isRunning()) {
                    factory.start();
                }
                String mode = factory.getClusterConfiguration() != null ? "cluster"
                        : factory.getSentinelConfiguration() != null ? "sentinel master "
                                + factory.getSentinelConfiguration().getMaster().getName()
                                : "standalone " + factory.getHostName() + ":" + factory.getPort();
                return new RedisStoreClient(factory.getRequiredNativeClient(), false,
                        "the application's LettuceConnectionFactory, " + mode);
            }
        }

        /** No Spring Data Redis: the properties give the client. */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnMissingClass(LETTUCE_FACTORY_CLASS)
        static class WithoutSpringDataRedis {

            @Bean
            @ConditionalOnMissingBean(IdempotencyStore.class)
            RedisStoreClient acemqRedisStoreClient(AcemqProperties properties) {
                return RedisStores.client(properties.getStore().getRedis(), () -> {
                    throw new IllegalStateException("acemq.store.type=redis needs acemq.store.redis.uri (or "
                            + ".cluster-nodes), or Spring Data Redis (spring-boot-starter-data-redis) with Lettuce, "
                            + "whose LettuceConnectionFactory the store then uses");
                });
            }
        }
    }

    /** The store module is missing: say so at startup instead of failing later for want of a store bean. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass(STORE_CLASS)
    static class MissingStoreModule {

        @Bean
        @ConditionalOnMissingBean(IdempotencyStore.class)
        IdempotencyStore acemqIdempotencyStore() {
            throw new IllegalStateException("acemq.store.type=redis needs the Redis store on the class path: add the "
                    + "dependency org.acemq.amqp:acemq-idempotency-redis");
        }
    }
}

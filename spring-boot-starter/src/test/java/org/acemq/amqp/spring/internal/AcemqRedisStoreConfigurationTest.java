package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.store.redis.RedisIdempotencyStore;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * Which store {@code acemq.store.type} gives, and the start-up failures that need no Redis: the store module or Spring
 * Data Redis missing from the class path, no client to build the store on. (The store on a real Redis:
 * {@code RedisStarterIT}.)
 */
class AcemqRedisStoreConfigurationTest {

    final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AcemqRedisStoreConfiguration.class, AcemqAutoConfiguration.class))
            .withPropertyValues("acemq.consumer.auto-startup=false");

    @Test
    void redisIsNeverChosenUnlessTheTypeSaysSo() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(IdempotencyStore.class)).isInstanceOf(InMemoryIdempotencyStore.class);
            assertThat(context).doesNotHaveBean(RedisStoreClient.class);
        });
        runner.withBean(LettuceConnectionFactory.class, LettuceConnectionFactory::new).run(context -> {
            assertThat(context.getBean(IdempotencyStore.class))
                    .as("a Redis connection factory alone does not make Redis the store")
                    .isInstanceOf(InMemoryIdempotencyStore.class);
        });
    }

    @Test
    void withoutTheStoreModuleStartupSaysWhichDependencyToAdd() {
        runner.withPropertyValues("acemq.store.type=redis")
                .withClassLoader(new FilteredClassLoader(RedisIdempotencyStore.class))
                .run(context -> assertThat(context).getFailure().rootCause().hasMessage("acemq.store.type=redis needs "
                        + "the Redis store on the class path: add the dependency "
                        + "org.acemq.amqp:acemq-idempotency-redis"));
    }

    @Test
    void withoutSpringDataRedisAUriIsNeeded() {
        runner.withPropertyValues("acemq.store.type=redis")
                .withClassLoader(new FilteredClassLoader(LettuceConnectionFactory.class))
                .run(context -> assertThat(context).getFailure().rootCause().hasMessageContaining(
                        "acemq.store.type=redis needs acemq.store.redis.uri (or .cluster-nodes), or Spring Data Redis"));
    }

    @Test
    void severalConnectionFactoriesAndNoPrimaryFail() {
        runner.withPropertyValues("acemq.store.type=redis")
                .withBean("one", LettuceConnectionFactory.class, LettuceConnectionFactory::new)
                .withBean("two", LettuceConnectionFactory.class, LettuceConnectionFactory::new)
                .run(context -> assertThat(context).getFailure().rootCause().hasMessageContaining(
                        "several LettuceConnectionFactory beans and none is @Primary"));
    }
}

package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * {@code @AcemqListener(handlerExecutor = ...)} and {@code acemq.listeners.<name>.handler-executor}: the handlers run on
 * the named {@code Executor} bean's threads, each message once; a name that is no Executor bean fails the start
 * naming it.
 */
@Timeout(120)
class HandlerExecutorStarterIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    /** Which thread-name prefix ran each order, per listener. */
    static class Orders {
        final Map<String, String> threadOf = new ConcurrentHashMap<>();
        final AtomicInteger runs = new AtomicInteger();

        @AcemqListener(name = "on-annotation", address = "${test.a}", concurrency = "2", handlerExecutor = "orderThreads")
        void onAnnotation(String body) {
            ran("a " + body);
        }

        @AcemqListener(name = "on-property", address = "${test.b}")
        void onProperty(String body) {
            ran("b " + body);
        }

        private void ran(String what) {
            runs.incrementAndGet();
            threadOf.put(what, Thread.currentThread().getName().replaceAll("\\d+$", ""));
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Orders.class)
    static class App {
        @Bean(destroyMethod = "shutdownNow")
        ExecutorService orderThreads() {
            AtomicInteger n = new AtomicInteger();
            return Executors.newCachedThreadPool(r -> new Thread(r, "order-pool-" + n.incrementAndGet()));
        }

        @Bean(destroyMethod = "shutdownNow")
        ExecutorService otherThreads() {
            AtomicInteger n = new AtomicInteger();
            return Executors.newCachedThreadPool(r -> new Thread(r, "other-pool-" + n.incrementAndGet()));
        }
    }

    @Test
    void handlersRunOnTheNamedExecutorBean() {
        String a = "it-exec-a-" + UUID.randomUUID();
        String b = "it-exec-b-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(App.class, "test.a=" + a, "test.b=" + b,
                "acemq.listeners.on-property.handler-executor=otherThreads");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Orders orders = app.getBean(Orders.class);
            for (int i = 0; i < 10; i++) {
                client.send(a, AmqpTestClient.message("a-" + i, "o" + i));
                client.send(b, AmqpTestClient.message("b-" + i, "o" + i));
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> orders.runs.get() == 20);
            assertThat(orders.threadOf).hasSize(20);
            orders.threadOf.forEach((what, thread) -> assertThat(thread)
                    .as(what).isEqualTo(what.startsWith("a ") ? "order-pool-" : "other-pool-"));
        }
    }

    @Test
    void aNameThatIsNoExecutorBeanFailsTheStart() {
        assertThatThrownBy(() -> AcemqListenerIT.start(App.class, "test.a=it-exec-x", "test.b=it-exec-y",
                "acemq.listeners.on-property.handler-executor=noSuchBean").close())
                .hasStackTraceContaining("handlerExecutor names 'noSuchBean'")
                .hasStackTraceContaining("java.util.concurrent.Executor");
    }
}

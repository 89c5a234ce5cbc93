package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.spring.AcemqConsumerConnectionEvent;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.spring.AcemqListenerContainer;
import org.acemq.amqp.spring.AcemqListenerEvent;
import org.acemq.amqp.spring.AcemqListenerHandle;
import org.acemq.amqp.spring.AcemqListenerIdleEvent;
import org.acemq.amqp.spring.AcemqListenerPausedEvent;
import org.acemq.amqp.spring.AcemqListenerRegistry;
import org.acemq.amqp.spring.AcemqListenerResumedEvent;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.context.event.EventListener;

/**
 * Listener lifecycle in a real Boot application on embedded Artemis: ids, the registry (stop, start, pause, resume
 * while messages flow), {@code autoStartup=false}, and the events an {@code @EventListener} receives.
 */
@Timeout(180)
class ListenerLifecycleIT {

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    static ConfigurableApplicationContext start(Class<?> app, String... properties) {
        return new SpringApplicationBuilder(app).web(WebApplicationType.NONE)
                .properties(SharedBroker.connectionProperties())
                .properties("spring.autoconfigure.exclude="
                        + "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
                .properties(properties)
                .run();
    }

    /** Counts handler runs per message id. */
    static class Runs {
        final Map<Object, AtomicInteger> byId = new ConcurrentHashMap<>();
        final AtomicInteger total = new AtomicInteger();

        void record(Envelope envelope) {
            byId.computeIfAbsent(envelope.messageId(), k -> new AtomicInteger()).incrementAndGet();
            total.incrementAndGet();
        }

        List<Object> repeated() {
            return byId.entrySet().stream().filter(e -> e.getValue().get() > 1).map(Map.Entry::getKey).toList();
        }
    }

    static class Listeners {
        final Runs flow = new Runs();
        final Runs manual = new Runs();

        @AcemqListener(address = "${test.flow}", id = "flow", concurrency = "2", prefetch = "10")
        void onFlow(String body, Envelope envelope) {
            flow.record(envelope);
        }

        @AcemqListener(address = "${test.manual}", id = "manual", autoStartup = "false")
        void onManual(String body, Envelope envelope) {
            manual.record(envelope);
        }
    }

    static class Events {
        final List<ApplicationEvent> received = new CopyOnWriteArrayList<>();

        @EventListener
        void on(AcemqListenerEvent event) {
            received.add(event);
        }

        @EventListener
        void on(AcemqConsumerConnectionEvent event) {
            received.add(event);
        }

        long count(Class<?> type, String listenerId) {
            return received.stream().filter(type::isInstance)
                    .filter(e -> listenerId == null || ((AcemqListenerEvent) e).getListenerId().equals(listenerId))
                    .count();
        }

        long connections(boolean connected) {
            return received.stream().filter(e -> e instanceof AcemqConsumerConnectionEvent c
                    && c.isConnected() == connected).count();
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({Listeners.class, Events.class})
    static class LifecycleApp {
    }

    static String[] queues(String flow, String manual) {
        return new String[] {"test.flow=" + flow, "test.manual=" + manual};
    }

    @Test
    void aListenerStoppedAndStartedThroughTheRegistryWhileMessagesFlowLosesAndRepeatsNothing() {
        String flow = "lc-flow-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(LifecycleApp.class, queues(flow, "lc-m-" + UUID.randomUUID()));
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(Listeners.class).flow;
            AcemqListenerHandle listener = app.getBean(AcemqListenerRegistry.class).listener("flow");
            assertThat(app.getBean(AcemqListenerRegistry.class).listenerIds()).containsExactlyInAnyOrder("flow", "manual");
            await().until(listener::isRunning);
            client.sendBatch(flow, 300, i -> "a-" + i);
            await().until(() -> runs.total.get() >= 20);
            listener.stop();
            assertThat(listener.isRunning()).isFalse();
            int handled = runs.total.get();
            await().until(() -> broker.consumerCount(flow) == 0 && broker.deliveringCount(flow) == 0);
            client.sendBatch(flow, 100, i -> "b-" + i);
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> runs.total.get() == handled && broker.messageCount(flow) == 400 - handled);

            listener.start();
            assertThat(listener.isRunning()).isTrue();
            await().atMost(Duration.ofSeconds(60)).until(() -> runs.total.get() == 400);
            await().until(() -> broker.messageCount(flow) == 0);
            assertThat(runs.byId).hasSize(400);
            assertThat(runs.repeated()).isEmpty();
            ConsumerHealth health = app.getBean(AcemqListenerContainer.class).consumer().orElseThrow().health();
            assertThat(health.healthy()).as("the manual listener is stopped on purpose: %s", health).isTrue();
        }
    }

    @Test
    void aPausedListenerGivesItsCreditBackTakesNothingAndResumesWithEvents() {
        String flow = "lc-pause-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(LifecycleApp.class, queues(flow, "lc-m-" + UUID.randomUUID()));
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(Listeners.class).flow;
            Events events = app.getBean(Events.class);
            AcemqListenerHandle listener = app.getBean(AcemqListenerRegistry.class).listener("flow");
            AcemqListenerContainer container = app.getBean(AcemqListenerContainer.class);
            await().until(() -> credit(container, flow) > 0);

            listener.pause();
            assertThat(listener.isPaused()).isTrue();
            assertThat(listener.isRunning()).isTrue();
            await().until(() -> credit(container, flow) == 0);
            client.sendBatch(flow, 20, i -> "p-" + i);
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> runs.total.get() == 0 && broker.messageCount(flow) == 20
                            && broker.deliveringCount(flow) == 0);
            assertThat(events.count(AcemqListenerPausedEvent.class, "flow")).isEqualTo(1);

            listener.resume();
            assertThat(listener.isPaused()).isFalse();
            await().until(() -> runs.total.get() == 20 && broker.messageCount(flow) == 0);
            assertThat(events.count(AcemqListenerResumedEvent.class, "flow")).isEqualTo(1);
            assertThat(runs.repeated()).isEmpty();
        }
    }

    static int credit(AcemqListenerContainer container, String address) {
        return container.consumer().orElseThrow().health().subscriptions().stream()
                .filter(s -> s.address().equals(address)).findFirst().orElseThrow().credit();
    }

    @Test
    void aListenerWithoutAutoStartupConsumesNothingUntilStarted() {
        String manual = "lc-manual-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = start(LifecycleApp.class, queues("lc-f-" + UUID.randomUUID(), manual));
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Runs runs = app.getBean(Listeners.class).manual;
            AcemqListenerHandle listener = app.getBean(AcemqListenerRegistry.class).listener("manual");
            client.sendBatch(manual, 5, i -> "m-" + i);
            AcemqListenerContainer container = app.getBean(AcemqListenerContainer.class);
            await().until(() -> container.consumer().orElseThrow().health().connected());
            assertThat(listener.isRunning()).isFalse();
            await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5))
                    .until(() -> runs.total.get() == 0 && broker.consumerCount(manual) == 0
                            && broker.messageCount(manual) == 5);

            listener.start();
            await().until(() -> runs.total.get() == 5 && broker.messageCount(manual) == 0);
            assertThat(listener.isRunning()).isTrue();
        }
    }

    @Test
    void idleAndConnectionEventsReachAnEventListener() {
        String flow = "lc-idle-" + UUID.randomUUID();
        Events events;
        try (ConfigurableApplicationContext app = start(LifecycleApp.class, "test.flow=" + flow,
                "test.manual=lc-m-" + UUID.randomUUID(), "acemq.listeners." + flow + ".idle-event-interval=200ms")) {
            events = app.getBean(Events.class);
            await().until(() -> events.connections(true) == 1);
            await().until(() -> events.count(AcemqListenerIdleEvent.class, "flow") >= 2);
            AcemqListenerIdleEvent idle = (AcemqListenerIdleEvent) events.received.stream()
                    .filter(e -> e instanceof AcemqListenerIdleEvent).findFirst().orElseThrow();
            assertThat(idle.getIdleTime()).isGreaterThanOrEqualTo(Duration.ofMillis(200));
            assertThat(idle.getSource()).isInstanceOf(AcemqListenerHandle.class);
            assertThat(events.count(AcemqListenerIdleEvent.class, "manual"))
                    .as("no interval for the manual listener, which is stopped anyway").isZero();
            assertThat(events.connections(false)).isZero();
        }
        assertThat(events.connections(false)).isEqualTo(1);
    }

    static class SameIds {
        @AcemqListener(address = "lc-same-a", id = "same")
        void a(String body) {
        }

        @AcemqListener(address = "lc-same-b", id = "same")
        void b(String body) {
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(SameIds.class)
    static class SameIdsApp {
    }

    @Test
    void twoListenersWithOneIdFailTheStart() {
        assertThatThrownBy(() -> start(SameIdsApp.class).close())
                .hasStackTraceContaining("Two @AcemqListener methods have the id 'same'");
    }
}

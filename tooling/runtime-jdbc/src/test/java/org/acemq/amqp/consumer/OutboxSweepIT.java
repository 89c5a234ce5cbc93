package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.acemq.amqp.testsupport.PostgresExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The outbox sweep on embedded Artemis and real PostgreSQL, through the public API: messages a crash left in the
 * outbox are dispatched by the sweep after a restart, exactly once each as a downstream consumer keyed by message-id
 * sees them (two instances sweeping at once); while the broker is down they wait, untouched, and the outbox reads
 * healthy until they pass the maximum age; a destination the broker refuses keeps its message pending with the
 * broker's error recorded, counted and logged, turns health DOWN past the maximum age, and is dispatched once the
 * address exists; a message the broker rejects (an address past its size limit) stays pending the same way and goes
 * out once the address has room. A crash while instances run is repaired by their scheduled sweep. The meters are
 * read back from a real {@link SimpleMeterRegistry}.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class OutboxSweepIT {

    @RegisterExtension
    static final PostgresExtension POSTGRES = PostgresExtension.newSchema();

    private static final String REFUSED_ADDRESSES = "refused.#";
    /** Addresses that reject a message while they hold more than a byte (one unconsumed message). */
    private static final String FULL_ADDRESSES = "full.#";

    private EmbeddedArtemis broker;

    @BeforeEach
    void startBroker() {
        broker = EmbeddedArtemis.builder().maxDeliveryAttempts(100).redeliveryDelay(Duration.ZERO)
                .withoutAutoCreate(REFUSED_ADDRESSES).rejectAbove(FULL_ADDRESSES, 1).build().start();
    }

    @AfterEach
    void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void messagesACrashLeftInTheOutboxAreDispatchedByTheSweepAfterARestartOnceEach() throws Exception {
        String events = "sweep-restart-events";
        JdbcIdempotencyStore store = Outboxes.store(POSTGRES.schema(), "restart_idempotency");
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            keys.add(Outboxes.crashAfterCommit(broker, POSTGRES.schema(), "restart_idempotency",
                    "sweep-restart-orders-" + i, events, 3, "order-" + i));
        }
        for (String key : keys) {
            assertThat(store.isConfirmed(key)).isTrue();
            assertThat(store.pendingOutbox(key)).hasSize(3);
        }
        assertThat(store.outboxStatus().pending()).isEqualTo(6);

        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        RecordingObserver first = new RecordingObserver(metrics);
        RecordingObserver second = new RecordingObserver();
        try (Outboxes.Downstream downstream = new Outboxes.Downstream(broker, events)) {
            assertThat(downstream.handled.total()).as("nothing dispatched before the restart").isZero();
            // the restarted service, twice: two instances sweep the same outbox at once; neither consumes the
            // orders, so only the sweep can dispatch what waits
            try (AmqpConsumer a = restarted(store, "restarted-a", first);
                 AmqpConsumer b = restarted(store, "restarted-b", second)) {
                metrics.bindTo(a);
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                        .until(() -> downstream.handled.ids().size() == 6 && store.outboxStatus().pending() == 0);
                assertThat(first.sends(SendPath.SWEEP, SendResult.ACCEPTED)
                        + second.sends(SendPath.SWEEP, SendResult.ACCEPTED))
                        .as("the store's holds split the rows between the two sweeps: each sent once").isEqualTo(6);
                assertThat(registry.get("acemq.consumer.send.duration").tags("path", "sweep", "result", "accepted")
                        .timer().count()).isEqualTo(first.sends(SendPath.SWEEP, SendResult.ACCEPTED));
                await().atMost(Duration.ofSeconds(10)).until(() -> a.health().outbox().pending() == 0);
                assertThat(registry.get("acemq.outbox.pending").gauge().value()).isZero();
                assertThat(registry.get("acemq.outbox.oldest.age").timeGauge().value(TimeUnit.SECONDS)).isZero();
                assertThat(a.health().healthy()).isTrue();

                // a crash while both run: only their scheduled sweeps (every 200 ms, rows older than 500 ms) see it
                String late = Outboxes.crashAfterCommit(broker, POSTGRES.schema(), "restart_idempotency",
                        "sweep-restart-orders-late", events, 2, "order-late");
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                        .until(() -> downstream.handled.ids().size() == 8 && store.pendingOutbox(late).isEmpty());
                assertThat(first.sends(SendPath.SWEEP, SendResult.ACCEPTED)
                        + second.sends(SendPath.SWEEP, SendResult.ACCEPTED))
                        .as("the late crash's two rows sent by a scheduled sweep, once each").isEqualTo(8);
            }
            assertThat(downstream.handled.repeated()).as("each message handled once downstream").isEmpty();
            assertThat(downstream.handled.total()).isEqualTo(8);
        }
        assertThat(Outboxes.outboxRows(POSTGRES.schema(), "restart_outbox", "dispatched_at IS NULL")).isZero();
    }

    @Test
    void aMessageTheBrokerRejectsStaysInTheOutboxRecordedAndLoggedAndGoesOutOnceTheAddressHasRoom() throws Exception {
        String orders = "sweep-rejected-orders";
        String events = "full.events"; // rejects a message while it holds one
        JdbcIdempotencyStore store = Outboxes.store(POSTGRES.schema(), "rejected_idempotency", Duration.ofSeconds(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        RecordingObserver observed = new RecordingObserver(metrics);
        List<String> errors;
        String messageId;
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.send(events, AmqpTestClient.message("filler", "fills the address"));
            try (StandardErrorTee err = new StandardErrorTee();
                 AmqpConsumer service = E2e.consumer(broker, "sweep-rejected").store(store).observer(observed)
                         .outboxSweepInterval(Duration.ofMillis(250)).outboxSweepMinAge(Duration.ofMillis(500))
                         .subscribe(Subscription.builder(orders,
                                 Outboxes.handler(store, POSTGRES.dataSource(), events, 1)).build())
                         .start()) {
                metrics.bindTo(service);
                client.send(orders, AmqpTestClient.message("order-x", "order x"));

                await().atMost(Duration.ofSeconds(30))
                        .until(() -> observed.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                String key = observed.keys(Outcome.ACCEPTED, SettleReason.PROCESSED).get(0);
                // the message is accepted at its commit; the outbox relay's dispatch follows it
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                    assertThat(observed.sends(SendPath.OUTBOX, SendResult.REFUSED)).as("rejected after the commit")
                            .isEqualTo(1);
                    assertThat(Outboxes.outboxErrors(POSTGRES.schema(), "rejected_outbox")).hasSize(1);
                });
                assertThat(store.pendingOutbox(key)).as("kept, never dropped").hasSize(1);
                messageId = store.pendingOutbox(key).get(0).messageId();
                assertThat(Outboxes.outboxErrors(POSTGRES.schema(), "rejected_outbox")).singleElement().asString()
                        .contains(messageId, "'" + events + "'", "rejected", "amqp:resource-limit-exceeded");
                await().atMost(Duration.ofSeconds(10)).until(() -> service.health().outbox().failing() == 1);
                assertThat(service.health().outbox().lastError()).contains(messageId, "amqp:resource-limit-exceeded");
                assertThat(registry.get("acemq.outbox.failing").gauge().value()).isEqualTo(1);
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> observed.sends(SendPath.SWEEP, SendResult.REFUSED) > 0);
                assertThat(store.pendingOutbox(key)).as("rejected again by the sweep, still kept").hasSize(1);

                // the address's consumer takes the message that filled it: the next sweep's send is accepted
                assertThat(client.receive(events, 1, Duration.ofSeconds(10)))
                        .extracting(m -> String.valueOf(m.messageId())).containsExactly("filler");
                assertThat(client.receive(events, 1, Duration.ofSeconds(30)))
                        .extracting(m -> String.valueOf(m.messageId())).containsExactly(messageId);
                await().atMost(Duration.ofSeconds(10)).until(() -> store.pendingOutbox(key).isEmpty());
                assertThat(observed.sends(SendPath.SWEEP, SendResult.ACCEPTED)).isEqualTo(1);
                await().atMost(Duration.ofSeconds(10)).until(() -> service.health().outbox().failing() == 0);
                assertThat(service.health().outbox().lastError()).isNull();
                service.close();
                errors = err.lines(messageId);
            }
        }
        long refusals = observed.sends(SendPath.OUTBOX, SendResult.REFUSED)
                + observed.sends(SendPath.SWEEP, SendResult.REFUSED);
        assertThat(registry.get("acemq.consumer.send.duration").tags("path", "sweep", "result", "refused")
                .timer().count()).isEqualTo(observed.sends(SendPath.SWEEP, SendResult.REFUSED));
        assertThat(errors.stream().filter(l -> l.contains("ERROR")).toList())
                .as("one clear line per rejected attempt, naming the message-id, the address and the broker's answer")
                .hasSize((int) refusals)
                .allSatisfy(l -> assertThat(l).contains("'" + events + "'", "rejected", "amqp:resource-limit-exceeded",
                        "stays in the outbox"));
    }

    private AmqpConsumer restarted(JdbcIdempotencyStore store, String name, ConsumerObserver observer) {
        return E2e.consumer(broker, name).store(store).observer(observer)
                .outboxSweepInterval(Duration.ofMillis(200)).outboxSweepMinAge(Duration.ofMillis(500))
                .subscribe(Subscription.builder("sweep-restart-idle", e -> { }).build())
                .start();
    }

    @Test
    void whileTheBrokerIsDownTheMessagesWaitUntouchedAndTheOutboxReadsHealthyUntilTheMaximumAge() throws Exception {
        String events = "sweep-down-events";
        JdbcIdempotencyStore store = Outboxes.store(POSTGRES.schema(), "down_idempotency");
        String key = Outboxes.crashAfterCommit(broker, POSTGRES.schema(), "down_idempotency", "sweep-down-orders",
                events, 2, "order-down");
        broker.stop();

        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        Duration maxAge = Duration.ofSeconds(8);
        try (AmqpConsumer service = E2e.consumer(broker, "sweep-down").store(store).observer(metrics)
                .outboxSweepInterval(Duration.ofMillis(200)).outboxSweepMinAge(Duration.ZERO).outboxMaxAge(maxAge)
                .subscribe(Subscription.builder("sweep-down-idle", e -> { }).build())
                .start()) {
            metrics.bindTo(service);
            await().atMost(Duration.ofSeconds(10)).until(() -> service.health().outbox().pending() == 2);
            ConsumerHealth.OutboxHealth early = service.health().outbox();
            assertThat(service.health().connected()).isFalse();
            assertThat(early.overdue()).as("younger than %s", maxAge).isFalse();
            assertThat(early.failing()).as("nothing was tried while the broker was down").isZero();
            assertThat(registry.get("acemq.outbox.pending").gauge().value()).isEqualTo(2);
            assertThat(registry.get("acemq.outbox.oldest.age").timeGauge().value(TimeUnit.SECONDS)).isPositive();

            await().atMost(maxAge.plusSeconds(10)).until(() -> service.health().outbox().overdue());
            assertThat(Outboxes.outboxRows(POSTGRES.schema(), "down_outbox",
                    "dispatched_at IS NULL AND attempts = 0 AND last_error IS NULL"))
                    .as("still pending, never tried, nothing recorded against them").isEqualTo(2);
            assertThat(registry.get("acemq.consumer.send.duration").tags("path", "sweep", "result", "failed")
                    .timer().count()).isZero();

            broker.start(); // the same port: the consumer reconnects and the sweep runs at once
            try (Outboxes.Downstream downstream = new Outboxes.Downstream(broker, events)) {
                await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                        .until(() -> downstream.handled.ids().size() == 2 && store.pendingOutbox(key).isEmpty());
                await().atMost(Duration.ofSeconds(10)).until(() -> service.health().healthy());
                assertThat(service.health().outbox().overdue()).isFalse();
                assertThat(downstream.handled.repeated()).isEmpty();
            }
            assertThat(registry.get("acemq.consumer.send.duration").tags("path", "sweep", "result", "accepted")
                    .timer().count()).isEqualTo(2);
            assertThat(registry.get("acemq.outbox.pending").gauge().value()).isZero();
        }
    }

    @Test
    void aDestinationTheBrokerRefusesKeepsItsMessageRecordsAndLogsTheErrorAndTurnsHealthDownPastTheMaximumAge()
            throws Exception {
        String orders = "sweep-refused-orders";
        String events = "refused.events"; // refused.# are not created on demand by this broker
        // a lease of a second: a row whose dispatch failed is held from the sweep for a second
        JdbcIdempotencyStore store = Outboxes.store(POSTGRES.schema(), "refused_idempotency", Duration.ofSeconds(1));
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        RecordingObserver observed = new RecordingObserver(metrics);
        Duration maxAge = Duration.ofSeconds(4);
        List<String> errors;
        String messageId;
        try (StandardErrorTee err = new StandardErrorTee();
             AmqpConsumer service = E2e.consumer(broker, "sweep-refused").store(store).observer(observed)
                     .outboxSweepInterval(Duration.ofMillis(250)).outboxSweepMinAge(Duration.ofMillis(500))
                     .outboxMaxAge(maxAge)
                     .subscribe(Subscription.builder(orders, Outboxes.handler(store, POSTGRES.dataSource(), events, 1))
                             .build())
                     .start();
             AmqpTestClient client = AmqpTestClient.connect(broker)) {
            metrics.bindTo(service);
            client.send(orders, AmqpTestClient.message("order-r", "order r"));

            await().atMost(Duration.ofSeconds(30)).until(() -> observed.count(Outcome.ACCEPTED, SettleReason.PROCESSED)
                    == 1);
            String key = observed.keys(Outcome.ACCEPTED, SettleReason.PROCESSED).get(0);
            // the message is accepted at its commit; the outbox relay's dispatch follows it
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(observed.sends(SendPath.OUTBOX, SendResult.REFUSED)).as("the dispatch after the commit")
                        .isEqualTo(1);
                assertThat(Outboxes.outboxErrors(POSTGRES.schema(), "refused_outbox")).hasSize(1);
            });
            assertThat(store.pendingOutbox(key)).as("kept, never dropped").hasSize(1);
            messageId = store.pendingOutbox(key).get(0).messageId();
            assertThat(Outboxes.outboxErrors(POSTGRES.schema(), "refused_outbox")).singleElement().asString()
                    .contains(messageId, "'" + events + "'", "amqp:not-found");
            await().atMost(Duration.ofSeconds(10)).until(() -> service.health().outbox().failing() == 1);
            ConsumerHealth.OutboxHealth outbox = service.health().outbox();
            assertThat(outbox.lastError()).contains(messageId, events, "amqp:not-found");
            assertThat(registry.get("acemq.outbox.failing").gauge().value()).isEqualTo(1);
            assertThat(registry.get("acemq.consumer.send.duration").tags("path", "outbox", "result", "refused")
                    .timer().count()).isEqualTo(1);
            await().atMost(Duration.ofSeconds(10)).until(() -> observed.sends(SendPath.SWEEP, SendResult.REFUSED) > 0);

            await().atMost(maxAge.plusSeconds(10)).until(() -> !service.health().healthy());
            assertThat(service.health().outbox().overdue()).as("unhealthy because the message is overdue").isTrue();
            assertThat(service.health().connected()).isTrue();

            broker.createQueue(events); // the operator creates the address
            try (Outboxes.Downstream downstream = new Outboxes.Downstream(broker, events)) {
                await().atMost(Duration.ofSeconds(30)).until(() -> downstream.handled.ids().size() == 1
                        && store.pendingOutbox(key).isEmpty());
                await().atMost(Duration.ofSeconds(10)).until(() -> service.health().healthy());
                assertThat(service.health().outbox().failing()).isZero();
                assertThat(service.health().outbox().lastError()).isNull();
                assertThat(downstream.handled.repeated()).isEmpty();
            }
            assertThat(observed.sends(SendPath.SWEEP, SendResult.ACCEPTED)).isEqualTo(1);
            service.close();
            errors = err.lines(messageId);
        }
        long refusals = observed.sends(SendPath.OUTBOX, SendResult.REFUSED)
                + observed.sends(SendPath.SWEEP, SendResult.REFUSED);
        assertThat(errors.stream().filter(l -> l.contains("ERROR")).toList())
                .as("one clear line per refused attempt, naming the message-id, the address and the broker's condition")
                .hasSize((int) refusals)
                .allSatisfy(l -> assertThat(l).contains("'" + events + "'", "amqp:not-found", "stays in the outbox"));
        assertThat(registry.get("acemq.consumer.send.duration").tags("path", "sweep", "result", "refused")
                .timer().count()).isEqualTo(observed.sends(SendPath.SWEEP, SendResult.REFUSED));
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.micrometer.MicrometerObserver;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.PostgresExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The transactional outbox end to end on embedded Artemis and real PostgreSQL, through the public API: a
 * {@code JdbcTransactionalHandler} that writes a row and sends an event delivers each event once, as a downstream
 * consumer keyed by message-id sees it, and leaves every outbox row dispatched; a copy of an incoming message whose
 * process died between its commit and its dispatch dispatches the pending messages before the copy is accepted.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TransactionalOutboxIT extends ArtemisTestBase {

    @RegisterExtension
    static final PostgresExtension POSTGRES = PostgresExtension.newSchema();

    @Test
    void eachOrderSendsItsEventOnceAndEveryOutboxRowEndsDispatched() throws Exception {
        String orders = "tx-outbox-orders";
        String events = "tx-outbox-events";
        int count = 60;
        JdbcIdempotencyStore store = Outboxes.store(POSTGRES.schema(), "e2e_idempotency");
        List<AmqpTestClient.MessageSpec> published = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            published.add(AmqpTestClient.message("order-" + i, "order " + i));
            if (i % 10 == 0) {
                published.add(AmqpTestClient.message("order-" + i, "order " + i)); // a publisher's retry
            }
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        MicrometerObserver metrics = MicrometerObserver.of(registry);
        RecordingObserver observed = new RecordingObserver(metrics);
        try (Outboxes.Downstream downstream = new Outboxes.Downstream(broker, events);
             AmqpConsumer service = E2e.consumer(broker, "tx-outbox").store(store).observer(observed)
                     .subscribe(Subscription.builder(orders, Outboxes.handler(store, POSTGRES.dataSource(), events, 1))
                             .concurrency(4).build())
                     .start()) {
            metrics.bindTo(service);
            client.send(orders, published);

            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                    .until(() -> downstream.handled.ids().size() == count
                            && observed.count(Outcome.ACCEPTED, SettleReason.PROCESSED)
                            + observed.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == published.size()
                            && store.outboxStatus().pending() == 0);
            assertThat(downstream.handled.repeated()).as("each event handled once downstream").isEmpty();
            assertThat(Outboxes.businessRows(POSTGRES.schema(), orders)).isEqualTo(count);
            assertThat(Outboxes.outboxRows(POSTGRES.schema(), "e2e_outbox", "true")).isEqualTo(count);
            assertThat(Outboxes.outboxRows(POSTGRES.schema(), "e2e_outbox", "dispatched_at IS NOT NULL"))
                    .as("every row marked dispatched").isEqualTo(count);
            // a publisher's retry that arrives while its original's dispatch is not marked yet dispatches the same
            // messages again (the same ids), which the downstream consumer absorbed above
            long dispatched = observed.sends(SendPath.OUTBOX, SendResult.ACCEPTED);
            assertThat(dispatched).as("dispatched from the outbox, once each but for retries racing their original")
                    .isBetween((long) count, (long) published.size());
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
                    downstream.observed.count(Outcome.ACCEPTED, SettleReason.DUPLICATE)).isEqualTo(dispatched - count));
            assertThat(observed.sends(SendPath.DIRECT, SendResult.ACCEPTED)).as("never sent around the outbox")
                    .isZero();
            assertThat(registry.get("acemq.consumer.send.duration").tags("path", "outbox", "result", "accepted")
                    .timer().count()).isEqualTo(dispatched);
            await().atMost(Duration.ofSeconds(30)).until(() -> service.health().outbox() != null
                    && service.health().outbox().pending() == 0);
            assertThat(registry.get("acemq.outbox.pending").gauge().value()).isZero();
        }
        assertThat(broker.messageCount(orders)).isZero();
        assertThat(broker.messageCount(events)).isZero();
    }

    @Test
    void aCopyOfAnIncomingMessageWhoseProcessDiedAfterTheCommitDispatchesItsOutboxBeforeItIsAccepted()
            throws Exception {
        String orders = "tx-outbox-copy-orders";
        String events = "tx-outbox-copy-events";
        JdbcIdempotencyStore store = Outboxes.store(POSTGRES.schema(), "copy_idempotency");
        String key = Outboxes.crashAfterCommit(broker, POSTGRES.schema(), "copy_idempotency", orders, events, 2,
                "order-copy");
        assertThat(store.isConfirmed(key)).as("the work committed").isTrue();
        assertThat(store.pendingOutbox(key)).as("its messages wait in the outbox").hasSize(2);
        assertThat(client.receiveAll(events, Duration.ofMillis(300))).as("nothing was dispatched").isEmpty();

        List<String> events1 = new CopyOnWriteArrayList<>();
        ConsumerObserver order = new ConsumerObserver() {
            @Override
            public void sent(SendPath path, SendResult result, long nanos) {
                events1.add("sent " + path + " " + result);
            }

            @Override
            public void settled(String subscription, String messageKey, Outcome outcome, SettleReason reason) {
                events1.add("settled " + outcome + "/" + reason);
            }
        };
        try (Outboxes.Downstream downstream = new Outboxes.Downstream(broker, events);
             AmqpConsumer service = E2e.consumer(broker, "tx-outbox-copy").store(store).observer(order)
                     // the sweep would take the messages only after an hour: only the copy can dispatch them
                     .outboxSweepMinAge(Duration.ofHours(1)).outboxMaxAge(Duration.ofHours(2))
                     .subscribe(Subscription.builder(orders, Outboxes.handler(store, POSTGRES.dataSource(), events,
                             2)).build())
                     .start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> events1.contains("settled ACCEPTED/DUPLICATE")
                    && downstream.handled.ids().size() == 2);
            assertThat(events1).as("dispatched, then the copy accepted").containsExactly(
                    "sent OUTBOX ACCEPTED", "sent OUTBOX ACCEPTED", "settled ACCEPTED/DUPLICATE");
            assertThat(downstream.handled.repeated()).isEmpty();
            assertThat(store.pendingOutbox(key)).isEmpty();
            assertThat(Outboxes.businessRows(POSTGRES.schema(), orders)).as("the handler did not run again")
                    .isEqualTo(1);
        }
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A TRANSACTIONAL subscription on Artemis: what the handler sends goes out in the AMQP transaction that accepts the
 * incoming message, so the events appear exactly when the commands are accepted, and each command's claim is
 * confirmed only once that transaction committed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TransactionalSendIT extends ArtemisTestBase {

    @Test
    void theSendsAndTheAcceptCommitTogether() {
        String in = "txsend-orders";
        String out = "txsend-events";
        int orders = 60;
        client.sendBatch(in, orders, i -> "order-" + i, i -> "order " + i);
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        RecordingObserver observer = new RecordingObserver();
        Set<String> ids = ConcurrentHashMap.newKeySet();
        try (AmqpConsumer consumer = E2e.consumer(broker, "txsend").store(store).observer(observer)
                .subscribe(Subscription.builder(in, e -> {
                    ids.add(e.send(out, OutgoingMessage.of("accepted " + e.body(String.class))));
                    e.send(out + "-audit", OutgoingMessage.of("audit " + e.messageId()));
                }).acknowledgementMode(AcknowledgementMode.TRANSACTIONAL).transactionBatch(10, Duration.ofMillis(20))
                        .concurrency(2).build())
                .start()) {
            await().atMost(Duration.ofSeconds(30)).until(() ->
                    observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == orders);
            await().until(() -> broker.messageCount(in) == 0);
            assertThat(store.isConfirmed(in + "|s:order-0")).as("confirmed after the commit").isTrue();
            assertThat(store.isConfirmed(in + "|s:order-" + (orders - 1))).isTrue();
            assertThat(observer.sends()).as("every send reported, on the transaction's path")
                    .allMatch(s -> s.path() == SendPath.TRANSACTION)
                    .filteredOn(s -> s.result() == SendResult.ACCEPTED).hasSizeGreaterThanOrEqualTo(2 * orders);
        }
        List<ReceivedMessage> events = client.receiveAll(out, Duration.ofMillis(500));
        assertThat(events).hasSize(orders);
        assertThat(events).extracting(m -> String.valueOf(m.messageId())).containsExactlyInAnyOrderElementsOf(ids);
        assertThat(client.receiveAll(out + "-audit", Duration.ofMillis(500))).hasSize(orders);
    }
}

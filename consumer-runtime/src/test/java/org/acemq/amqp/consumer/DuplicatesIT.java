package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Publisher retries (the same message-id sent again) against the real runtime and a real broker: every unique
 * message has its effect exactly once, every copy is accepted as a DUPLICATE, and nothing is left in the queue or
 * dead-lettered.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DuplicatesIT extends ArtemisTestBase {

    @Test
    void everyUniqueMessageHasItsEffectOnceAndEveryInjectedDuplicateIsAcceptedAsDuplicate() {
        String q = "dup-orders";
        int unique = 300;
        // Interleaved: each fifth message is sent a second time right after a later one (a retrying publisher
        // whose first send had in fact succeeded), so copies may meet their original while it is still running.
        List<MessageSpec> first = new ArrayList<>();
        int interleavedCopies = 0;
        for (int i = 0; i < unique; i++) {
            first.add(AmqpTestClient.message("order-" + i, "body-" + i));
            if (i % 5 == 4) {
                first.add(AmqpTestClient.message("order-" + (i - 2), "body-" + (i - 2)));
                interleavedCopies++;
            }
        }
        client.send(q, first);

        E2e.Effects effects = new E2e.Effects();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (AmqpConsumer consumer = E2e.consumer(broker, "dups").store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> effects.record(e.id())).concurrency(4).prefetch(50)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start()) {
            int copies = interleavedCopies;
            await().atMost(Duration.ofSeconds(30)).until(() ->
                    observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == unique
                            && observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == copies);

            // Late retries, after everything was processed: pure duplicates.
            int lateCopies = 40;
            client.sendBatch(q, lateCopies, i -> "order-" + (i * 7), i -> "body-" + (i * 7));
            await().atMost(Duration.ofSeconds(30)).until(() ->
                    observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == copies + lateCopies);
            await().until(() -> broker.messageCount(q) == 0);

            assertThat(effects.total()).as("handler effects").isEqualTo(unique);
            assertThat(effects.repeated()).as("ids with more than one effect").isEmpty();
            assertThat(effects.ids()).hasSize(unique);
            assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(unique);
            // Nothing else was settled: only copies that met a running original were released (IN_PROGRESS).
            assertThat(observer.settlements()).allSatisfy(s -> assertThat(s.reason())
                    .isIn(SettleReason.PROCESSED, SettleReason.DUPLICATE, SettleReason.IN_PROGRESS));
            assertThat(observer.settlements()).filteredOn(s -> s.reason() == SettleReason.IN_PROGRESS)
                    .allSatisfy(s -> assertThat(s.outcome()).isEqualTo(Outcome.RELEASED));
            assertThat(observer.abandonments()).isEqualTo(0);
            assertThat(store.isConfirmed(q + "|s:order-0")).isTrue();
            assertThat(store.isConfirmed(q + "|s:order-" + (unique - 1))).isTrue();
        }
        assertThat(broker.messageCount(q)).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }
}

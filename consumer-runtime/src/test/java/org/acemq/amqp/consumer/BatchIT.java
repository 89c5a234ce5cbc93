package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Batch handlers on the real broker: per-item failures ({@link BatchItemsFailedException}) and whole-batch failures.
 * Items named transient come back from the broker and run again; items named permanent are dead-lettered; every
 * other item of the batch is accepted once and never runs again. Duplicates never reach the handler, and a partial
 * batch is handed over when its time is up.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class BatchIT extends ArtemisTestBase {

    /** Every batch the handler got (message-ids in order), and the effect count of every message-id. */
    static final class Calls {
        final List<List<String>> batches = new CopyOnWriteArrayList<>();
        final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();

        List<String> record(List<Envelope> batch) {
            List<String> ids = new ArrayList<>(batch.size());
            for (Envelope e : batch) {
                String id = String.valueOf(e.messageId());
                ids.add(id);
                seen.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
            }
            batches.add(ids);
            return ids;
        }

        void effect(String id) {
            effects.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
        }

        int seen(String id) {
            AtomicInteger n = seen.get(id);
            return n == null ? 0 : n.get();
        }
    }

    private static List<MessageSpec> messages(String prefix, int n) {
        List<MessageSpec> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(AmqpTestClient.message(prefix + i, "reading " + i));
        }
        return out;
    }

    private static Subscription.Builder batches(String q, BatchHandler handler) {
        return Subscription.batchBuilder(q, handler).batchSize(10).batchTime(Duration.ofMillis(100)).concurrency(2)
                .prefetch(30).maxAttempts(3).retryBackoff(RetryBackoff.none())
                .inProgressDelay(E2e.IN_PROGRESS_DELAY);
    }

    @Test
    void namedItemsFailAsTheirCausesSayAndTheRestOfTheirBatchIsAcceptedOnce() {
        String q = "batch-items";
        int n = 100;
        client.send(q, messages("r-", n));
        // r-3, r-13, ...: fail transiently the first time; r-7, r-17, ...: fail permanently
        Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        Calls calls = new Calls();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = E2e.consumer(broker, "batch-items").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(batches(q, batch -> {
                    List<String> ids = calls.record(batch);
                    Map<Integer, Throwable> failed = new HashMap<>();
                    for (int i = 0; i < ids.size(); i++) {
                        String id = ids.get(i);
                        if (id.endsWith("7")) {
                            failed.put(i, new PermanentMessageException("test: never valid"));
                        } else if (id.endsWith("3") && failedOnce.add(id)) {
                            failed.put(i, new IllegalStateException("test: downstream busy"));
                        } else {
                            calls.effect(id);
                        }
                    }
                    if (!failed.isEmpty()) {
                        throw new BatchItemsFailedException(failed);
                    }
                }).build())
                .start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> broker.messageCount(q) == 0
                    && broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == 10
                    && observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == n - 10);
        }
        for (int i = 0; i < n; i++) {
            String id = "r-" + i;
            if (id.endsWith("7")) {
                assertThat(calls.seen(id)).as("runs of the permanently failing %s", id).isEqualTo(1);
                assertThat(calls.effects).doesNotContainKey(id);
            } else if (id.endsWith("3")) {
                assertThat(calls.seen(id)).as("runs of the transiently failing %s: redelivered once", id)
                        .isEqualTo(2);
                assertThat(calls.effects.get(id)).as("effects of %s", id).hasValue(1);
            } else {
                assertThat(calls.seen(id)).as("runs of %s, which did not fail: never again", id).isEqualTo(1);
                assertThat(calls.effects.get(id)).as("effects of %s", id).hasValue(1);
            }
        }
        assertThat(calls.batches).allSatisfy(b -> assertThat(b).hasSizeLessThanOrEqualTo(10)
                .doesNotHaveDuplicates());
        assertThat(calls.batches).as("batches of more than one message").anySatisfy(b -> assertThat(b).hasSize(10));
        assertThat(observer.count(Outcome.REJECTED, SettleReason.PERMANENT)).isEqualTo(10);
        assertThat(observer.count(Outcome.MODIFIED, SettleReason.FAILED)).isEqualTo(10);
        assertThat(client.drain(EmbeddedArtemis.deadLetterQueueName(q))).extracting(ReceivedMessage::messageId)
                .containsExactlyInAnyOrder("r-7", "r-17", "r-27", "r-37", "r-47", "r-57", "r-67", "r-77", "r-87",
                        "r-97");
    }

    @Test
    void aBatchThatFailsAsAWholeComesBackWholeAndEachMessageTakesEffectOnce() {
        String q = "batch-whole";
        int n = 60;
        client.send(q, messages("w-", n));
        AtomicInteger failures = new AtomicInteger();
        Calls calls = new Calls();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = E2e.consumer(broker, "batch-whole").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(batches(q, batch -> {
                    List<String> ids = calls.record(batch);
                    // the first two calls fail as a whole, transiently
                    if (failures.incrementAndGet() <= 2) {
                        throw new IllegalStateException("test: the database is away");
                    }
                    ids.forEach(calls::effect);
                }).build())
                .start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> broker.messageCount(q) == 0
                    && observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == n);
        }
        List<String> failedItems = new ArrayList<>(calls.batches.get(0));
        failedItems.addAll(calls.batches.get(1));
        assertThat(calls.effects).as("every message took effect").hasSize(n)
                .allSatisfy((id, count) -> assertThat(count).as("effects of %s", id).hasValue(1));
        assertThat(failedItems).isNotEmpty().allSatisfy(id -> assertThat(calls.seen(id)).isEqualTo(2));
        assertThat(observer.count(Outcome.MODIFIED, SettleReason.FAILED)).isEqualTo(failedItems.size());
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void aWholeBatchFailingPermanentlyIsDeadLetteredWhole() {
        String q = "batch-whole-permanent";
        client.send(q, messages("p-", 5));
        Calls calls = new Calls();
        try (AmqpConsumer consumer = E2e.consumer(broker, "batch-perm").store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(batches(q, batch -> {
                    calls.record(batch);
                    throw new PermanentMessageException("test: the whole file is malformed");
                }).build())
                .start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(q) == 0
                    && broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == 5);
        }
        assertThat(calls.seen).hasSize(5).allSatisfy((id, runs) -> assertThat(runs).hasValue(1));
        assertThat(client.drain(EmbeddedArtemis.deadLetterQueueName(q))).extracting(ReceivedMessage::messageId)
                .containsExactlyInAnyOrder("p-0", "p-1", "p-2", "p-3", "p-4");
    }

    @Test
    void duplicatesNeverReachTheHandlerAndAPartialBatchIsHandedOverWhenItsTimeIsUp() {
        String q = "batch-dups";
        Calls calls = new Calls();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = E2e.consumer(broker, "batch-dups").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(Subscription.batchBuilder(q, batch -> calls.record(batch).forEach(calls::effect))
                        .batchSize(50).batchTime(Duration.ofSeconds(1)).prefetch(100)
                        .inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> consumer.health().healthy());
            // 7 messages, two of them sent twice in a row: one partial batch of the 7 distinct messages once its time
            // (1 s) is up; the copies are held back while their originals run (in progress), then found duplicates
            List<MessageSpec> sent = messages("d-", 7);
            sent.add(AmqpTestClient.message("d-2", "reading 2"));
            sent.add(AmqpTestClient.message("d-5", "reading 5"));
            client.send(q, sent);
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(q) == 0
                    && observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 7
                    && observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 2);
            assertThat(calls.batches).as("the first call").first().asList()
                    .containsExactlyInAnyOrder("d-0", "d-1", "d-2", "d-3", "d-4", "d-5", "d-6");
            // sent again later: all duplicates, the handler is not called
            client.send(q, messages("d-", 7));
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.messageCount(q) == 0
                    && observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) == 9);
        }
        assertThat(calls.effects).hasSize(7).allSatisfy((id, count) -> assertThat(count).hasValue(1));
        assertThat(calls.batches).allSatisfy(b -> assertThat(b).doesNotHaveDuplicates());
        assertThat(calls.batches.stream().mapToInt(List::size).sum()).as("messages handed to the handler")
                .isEqualTo(7);
    }
}

package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Ordered processing per key on the real broker: keys published in per-key sequence, interleaved, consumed with
 * {@code orderBy} at concurrency 16, with random handler times and transient failures. Every key's effects must happen
 * in publish order, none lost, none twice, and two runs of one key never overlap. The full size of the ordered
 * processing target (1,000 keys &times; 20 messages) runs here; its throughput against the same run unordered, and the
 * hot-key rates, are measured by the benchmark ({@code tooling/benchmarks/run.sh ordered}, docs/processing-modes.md).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class OrderedProcessingIT extends ArtemisTestBase {

    /** What a key's handler runs did: effects in the order they happened, and overlaps of two runs of the key. */
    static final class Ledger {
        final Map<String, List<Integer>> effects = new ConcurrentHashMap<>();
        final Map<String, AtomicBoolean> running = new ConcurrentHashMap<>();
        final List<String> overlaps = new CopyOnWriteArrayList<>();
        final AtomicInteger runs = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        final AtomicInteger done = new AtomicInteger();

        /**
         * A handler that takes 0-5 ms, fails {@code failurePercent} % of its runs transiently (before its effect),
         * and otherwise records the message's sequence number as its key's next effect.
         */
        MessageHandler handler(Function<Envelope, String> key, int failurePercent) {
            return e -> {
                String k = key.apply(e);
                int seq = sequence(e);
                runs.incrementAndGet();
                AtomicBoolean busy = running.computeIfAbsent(k, x -> new AtomicBoolean());
                if (!busy.compareAndSet(false, true)) {
                    overlaps.add(k + "/" + seq);
                }
                try {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    LockSupport.parkNanos(random.nextLong(5_000_001)); // the handler's work: 0-5 ms
                    if (random.nextInt(100) < failurePercent) {
                        failures.incrementAndGet();
                        throw new IllegalStateException("test: transient failure of " + k + "/" + seq);
                    }
                    effects.computeIfAbsent(k, x -> new CopyOnWriteArrayList<>()).add(seq);
                    done.incrementAndGet();
                } finally {
                    busy.set(false);
                }
            };
        }

        /** Asserts that every key has exactly its sequence 0..n-1, in that order. */
        void assertInPublishOrder(int keys, int perKey) {
            List<Integer> expected = new ArrayList<>(perKey);
            for (int s = 0; s < perKey; s++) {
                expected.add(s);
            }
            assertThat(overlaps).as("two runs of one key at the same time").isEmpty();
            assertThat(effects).as("keys with effects").hasSize(keys);
            effects.forEach((k, seqs) -> assertThat(seqs).as("effects of key %s", k).isEqualTo(expected));
        }
    }

    static int sequence(Envelope e) {
        String id = String.valueOf(e.messageId());
        return Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
    }

    /**
     * Message {@code key-seq} for seq 0..perKey-1 of every key, each key's in sequence, the keys merged at random
     * (seeded): a key's next message is usually far behind its previous one, and sometimes right behind it, within one
     * window, where an unordered consumer would run both at once.
     */
    static List<MessageSpec> interleaved(int keys, int perKey, Function<Integer, String> keyName,
                                         boolean groupId) {
        java.util.Random random = new java.util.Random(20_000L + keys * 31L + perKey);
        int[] next = new int[keys];
        List<Integer> open = new ArrayList<>(keys);
        for (int k = 0; k < keys; k++) {
            open.add(k);
        }
        List<MessageSpec> out = new ArrayList<>(keys * perKey);
        while (!open.isEmpty()) {
            int i = random.nextInt(open.size());
            int k = open.get(i);
            int s = next[k]++;
            if (next[k] == perKey) {
                open.set(i, open.get(open.size() - 1));
                open.remove(open.size() - 1);
            }
            String key = keyName.apply(k);
            MessageSpec m = AmqpTestClient.message(key + "-" + s, "update " + s + " of " + key);
            out.add(groupId ? m.groupId(key) : m.property("account", key));
        }
        return out;
    }

    private static Subscription.Builder ordered(String q, MessageHandler handler, KeySource key) {
        return Subscription.builder(q, handler).orderBy(key).concurrency(16)
                .retryBackoff(RetryBackoff.of(Duration.ofMillis(5), Duration.ofMillis(20), 2.0, 0.5))
                .maxAttempts(50); // a 10 % failure rate never exhausts 50 attempts (p = 1e-50)
    }

    @Test
    void aThousandKeysOfTwentyMessagesEachKeepTheirOrderAtConcurrency16WithRandomTimesAndTransientFailures() {
        String q = "ordered-full";
        int keys = 1_000;
        int perKey = 20;
        int total = keys * perKey;
        client.send(q, interleaved(keys, perKey, k -> "k" + k, true));
        assertThat(broker.messageCount(q)).isEqualTo(total);

        Ledger ledger = new Ledger();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        long start = System.nanoTime();
        try (AmqpConsumer consumer = E2e.consumer(broker, "ordered").store(store).observer(observer)
                .subscribe(ordered(q, ledger.handler(Envelope::groupId, 10), KeySource.groupId()).build())
                .start()) {
            await().atMost(Duration.ofSeconds(150)).until(() -> ledger.done.get() == total
                    && broker.messageCount(q) == 0);
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        System.out.printf("ordered-full: %,d messages, %,d handler runs, %,d transient failures in %,d ms%n", total,
                ledger.runs.get(), ledger.failures.get(), millis);
        ledger.assertInPublishOrder(keys, perKey);
        assertThat(ledger.failures.get()).as("transient failures injected").isGreaterThan(total / 20);
        assertThat(observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(total);
        // retried in place: a failed attempt is never settled (no modified/released), its key never goes back
        assertThat(observer.settlements()).extracting(RecordingObserver.Settlement::reason)
                .containsOnly(SettleReason.PROCESSED);
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }

    @Test
    void anApplicationPropertyKeyKeepsItsOrderToo() {
        String q = "ordered-property";
        int keys = 100;
        int perKey = 10;
        client.send(q, interleaved(keys, perKey, k -> "acct" + k, false));

        Ledger ledger = new Ledger();
        try (AmqpConsumer consumer = E2e.consumer(broker, "ordered-prop").store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(ordered(q, ledger.handler(e -> (String) e.applicationProperties().get("account"), 10),
                        KeySource.applicationProperty("account")).build())
                .start()) {
            await().atMost(Duration.ofSeconds(60)).until(() -> ledger.done.get() == keys * perKey
                    && broker.messageCount(q) == 0);
        }
        ledger.assertInPublishOrder(keys, perKey);
    }

    /**
     * Half the traffic on one key: the key's deliveries beyond its backlog are parked (their credit given back), the
     * intake stops at the parked limit and goes on as parked ones run; order holds for the hot key and the others.
     */
    @Test
    void aHotKeyWithHalfTheTrafficIsParkedBeyondItsBacklogAndEveryKeyKeepsItsOrder() {
        String q = "ordered-hot";
        int others = 200;
        int perKey = 3;
        int hot = others * perKey; // as many as all the other keys together
        List<MessageSpec> published = new ArrayList<>();
        int h = 0;
        for (MessageSpec m : interleaved(others, perKey, k -> "k" + k, true)) {
            published.add(m);
            published.add(AmqpTestClient.message("hot-" + h, "hot update " + h).groupId("hot"));
            h++;
        }
        client.send(q, published);

        Ledger ledger = new Ledger();
        RecordingObserver observer = new RecordingObserver();
        try (AmqpConsumer consumer = E2e.consumer(broker, "ordered-hot").store(InMemoryIdempotencyStore.ofDefaults())
                .observer(observer)
                .subscribe(ordered(q, ledger.handler(Envelope::groupId, 10), KeySource.groupId())
                        .prefetch(50).keyBacklog(4).parkedLimit(100).build())
                .start()) {
            await().atMost(Duration.ofSeconds(120)).until(() -> ledger.done.get() == hot + others * perKey
                    && broker.messageCount(q) == 0);
        }
        assertThat(ledger.overlaps).isEmpty();
        List<Integer> hotOrder = new ArrayList<>();
        for (int i = 0; i < hot; i++) {
            hotOrder.add(i);
        }
        assertThat(ledger.effects.get("hot")).as("the hot key's effects").isEqualTo(hotOrder);
        ledger.effects.remove("hot");
        ledger.assertInPublishOrder(others, perKey);
        assertThat(observer.settlements()).extracting(RecordingObserver.Settlement::reason)
                .containsOnly(SettleReason.PROCESSED);
    }

    /**
     * The byte bound on the real broker, where a delivery's size is read from its transfer frames: key a's first
     * message blocks in its handler, its next five (60,000 bytes each) park; with {@code parkedBytes(150_000)} the
     * intake stops after the third parked one, so key b's message, queued behind them, waits in the client until a's
     * first ran. With the default bound (64 MiB) b's message runs while a's first still blocks.
     */
    @Test
    void parkedLargeMessagesStopTheIntakeAtTheByteBoundAndOtherKeysWaitUntilTheyRan() throws Exception {
        assertThat(bThenA("ordered-bytes-default", Subscription.DEFAULT_PARKED_BYTES))
                .as("default bound: b ran while a's first blocked").startsWith("b-1");
        assertThat(bThenA("ordered-bytes-bounded", 150_000))
                .as("bound reached: b ran only after a's first").startsWith("a-0");
    }

    /** @return the order the handlers ran in, after a's first message was let go */
    private List<String> bThenA(String q, long parkedBytes) throws Exception {
        List<MessageSpec> published = new ArrayList<>();
        String large = "x".repeat(60_000); // below Artemis's AMQP large-message threshold (100 KiB)
        for (int i = 0; i < 6; i++) {
            published.add(AmqpTestClient.message("a-" + i, large).groupId("a"));
        }
        published.add(AmqpTestClient.message("b-1", "small").groupId("b"));
        client.send(q, published);

        List<String> ran = new CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch firstBlocks = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
        MessageHandler handler = e -> {
            String id = String.valueOf(e.messageId());
            if (id.equals("a-0")) {
                firstBlocks.countDown();
                if (!letGo.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("test: never let go");
                }
            }
            ran.add(id);
        };
        try (AmqpConsumer consumer = E2e.consumer(broker, q).store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder(q, handler).orderBy(KeySource.groupId()).concurrency(2).prefetch(2)
                        .keyBacklog(1).parkedBytes(parkedBytes).build())
                .start()) {
            assertThat(firstBlocks.await(30, TimeUnit.SECONDS)).isTrue();
            if (parkedBytes == Subscription.DEFAULT_PARKED_BYTES) {
                await().atMost(Duration.ofSeconds(30)).until(() -> ran.contains("b-1"));
            } else {
                await("key b waits while the parked messages of a weigh the bound").during(Duration.ofSeconds(2))
                        .atMost(Duration.ofSeconds(5)).until(ran::isEmpty);
            }
            letGo.countDown();
            await().atMost(Duration.ofSeconds(30)).until(() -> ran.size() == 7 && broker.messageCount(q) == 0);
        }
        assertThat(ran.stream().filter(id -> id.startsWith("a-")).toList()).as("key a in order")
                .containsExactly("a-0", "a-1", "a-2", "a-3", "a-4", "a-5");
        return ran;
    }
}

package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Positive;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.spring.AcemqListener;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.Tracker;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.handler.annotation.Header;

/**
 * Ordered and batch listeners in a Boot application on the embedded Artemis: order per key (the AMQP group-id set by
 * the annotation, an application property set by properties) with concurrency, handler time and transient failures;
 * a batch listener whose batches hold several messages, with a body that does not convert, a payload that is not
 * valid and items the method names as failed; and a batch listener with a database transaction failing the start.
 */
@Timeout(240)
class ListenerModesIT {

    static final int KEYS = 30;
    static final int PER_KEY = 20;

    static EmbeddedArtemis broker;

    @BeforeAll
    static void startBroker() {
        broker = SharedBroker.get();
    }

    /** Records, per key, the sequence numbers in the order they were handled, and any overlap within a key. */
    static final class Effects {
        final Map<String, List<Integer>> order = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> running = new ConcurrentHashMap<>();
        final AtomicInteger overlaps = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();

        void handle(String key, int seq, int attempt) {
            AtomicInteger inKey = running.computeIfAbsent(key, k -> new AtomicInteger());
            if (inKey.incrementAndGet() > 1) {
                overlaps.incrementAndGet();
            }
            try {
                // handler work of up to a millisecond, so that deliveries of different keys interleave
                LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(1_000_000));
                if (seq % 7 == 3 && attempt == 1) {
                    failures.incrementAndGet();
                    throw new IllegalStateException("transient failure of " + key + "/" + seq);
                }
                order.computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>())).add(seq);
            } finally {
                inKey.decrementAndGet();
            }
        }
    }

    static class Ordered {
        final Effects byGroup = new Effects();
        final Effects byAccount = new Effects();

        @AcemqListener(address = "${test.queue}.by-group", orderBy = "group-id", concurrency = "8",
                retryBackoffFirst = "1ms", retryBackoffMax = "5ms")
        void onGroup(String body, Envelope envelope) {
            byGroup.handle(envelope.groupId(), Integer.parseInt(body), envelope.attempt());
        }

        /** Ordered by acemq.listeners.by-account.order-by-property, not by an attribute. */
        @AcemqListener(name = "by-account", address = "${test.queue}.by-account", concurrency = "8",
                retryBackoffFirst = "1ms", retryBackoffMax = "5ms")
        void onAccount(String body, @Header("account") String account, Envelope envelope) {
            byAccount.handle(account, Integer.parseInt(body), envelope.attempt());
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Ordered.class)
    static class OrderedApp {
    }

    /** Publishes PER_KEY messages for each of KEYS keys, interleaved, on one link (so in one order per key). */
    static void publishInterleaved(AmqpTestClient client, String address, boolean groupId) throws Exception {
        try (Sender sender = client.connection().openSender(address)) {
            List<Tracker> trackers = new ArrayList<>();
            for (int seq = 0; seq < PER_KEY; seq++) {
                for (int k = 0; k < KEYS; k++) {
                    org.apache.qpid.protonj2.client.Message<Object> m = org.apache.qpid.protonj2.client.Message
                            .create((Object) Integer.toString(seq));
                    m.messageId(address + "/" + k + "/" + seq);
                    if (groupId) {
                        m.groupId("key-" + k);
                    } else {
                        m.property("account", "key-" + k);
                    }
                    trackers.add(sender.send(m));
                }
            }
            for (Tracker t : trackers) {
                t.awaitSettlement(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void orderedListenersHandleEachKeysMessagesOneAtATimeInPublishOrder() throws Exception {
        String queue = "it-ordered-" + UUID.randomUUID();
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(OrderedApp.class, "test.queue=" + queue,
                "acemq.listeners.by-account.order-by-property=account",
                "acemq.listeners.by-account.key-backlog=2");
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Ordered ordered = app.getBean(Ordered.class);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            publishInterleaved(client, queue + ".by-group", true);
            publishInterleaved(client, queue + ".by-account", false);

            await().atMost(Duration.ofSeconds(180)).untilAsserted(() -> {
                assertThat(AcemqListenerIT.count(registry, queue + ".by-group", "accepted", "processed"))
                        .isEqualTo(KEYS * PER_KEY);
                assertThat(AcemqListenerIT.count(registry, "by-account", "accepted", "processed"))
                        .isEqualTo(KEYS * PER_KEY);
            });
            List<Integer> publishOrder = new ArrayList<>();
            for (int seq = 0; seq < PER_KEY; seq++) {
                publishOrder.add(seq);
            }
            for (Effects effects : List.of(ordered.byGroup, ordered.byAccount)) {
                assertThat(effects.order).hasSize(KEYS);
                effects.order.forEach((key, seqs) -> assertThat(seqs).as("the order of key " + key)
                        .isEqualTo(publishOrder));
                assertThat(effects.overlaps).as("two messages of one key at the same time").hasValue(0);
                assertThat(effects.failures).as("transient failures happened, and held their keys")
                        .hasValue(KEYS * 3);
            }
        }
    }

    // ------------------------------------------------------------------ batches

    record Reading(String sensor, @Positive(message = "must be greater than 0") int value) {
    }

    static class Batches {
        final List<Integer> sizes = new CopyOnWriteArrayList<>();
        final Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();

        @AcemqListener(address = "${test.queue}.readings", batch = "true", batchSize = "10", batchTime = "300ms",
                prefetch = "40", maxAttempts = "3", retryBackoffFirst = "0")
        void onReadings(@Valid List<Reading> readings, List<Envelope> envelopes) {
            sizes.add(readings.size());
            Map<Integer, Throwable> failed = new HashMap<>();
            for (int i = 0; i < readings.size(); i++) {
                Reading r = readings.get(i);
                if (r.sensor().equals("broken")) {
                    failed.put(i, new PermanentMessageException("sensor " + r.sensor() + " is decommissioned"));
                } else if (r.sensor().equals("flaky") && envelopes.get(i).attempt() == 1) {
                    failed.put(i, new IllegalStateException("sensor store busy"));
                } else {
                    handled.computeIfAbsent(r.sensor(), k -> new AtomicInteger()).incrementAndGet();
                }
            }
            if (!failed.isEmpty()) {
                throw new BatchItemsFailedException(failed);
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Batches.class)
    static class BatchApp {
        final List<RejectionHandler.Rejection> rejections = new CopyOnWriteArrayList<>();

        @Bean
        RejectionHandler recordRejections() {
            return rejection -> {
                rejections.add(rejection);
                return RejectionHandler.Decision.REJECT;
            };
        }
    }

    @Test
    void aBatchListenerGetsSeveralMessagesPerCallAndItsFailedItemsFailAlone() {
        String queue = "it-batch-" + UUID.randomUUID();
        String readings = queue + ".readings";
        try (ConfigurableApplicationContext app = AcemqListenerIT.start(BatchApp.class, "test.queue=" + queue);
                AmqpTestClient client = AmqpTestClient.connect(broker)) {
            Batches batches = app.getBean(Batches.class);
            BatchApp batchApp = app.getBean(BatchApp.class);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            List<AmqpTestClient.MessageSpec> messages = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                messages.add(AmqpTestClient.message("r-" + i, "{\"sensor\":\"s" + i + "\",\"value\":" + (i + 1) + "}"));
                if (i == 5) {
                    messages.add(AmqpTestClient.message("bad-json", "{not json"));
                    messages.add(AmqpTestClient.message("invalid", "{\"sensor\":\"zero\",\"value\":0}"));
                }
                if (i == 12) {
                    messages.add(AmqpTestClient.message("broken", "{\"sensor\":\"broken\",\"value\":1}"));
                    messages.add(AmqpTestClient.message("flaky", "{\"sensor\":\"flaky\",\"value\":1}"));
                }
            }
            client.send(readings, messages);

            await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> {
                assertThat(AcemqListenerIT.count(registry, readings, "accepted", "processed")).isEqualTo(31);
                assertThat(AcemqListenerIT.count(registry, readings, "rejected", "permanent")).isEqualTo(3);
            });
            assertThat(batches.handled).hasSize(31).allSatisfy((sensor, n) -> assertThat(n)
                    .as("sensor " + sensor + " handled once").hasValue(1));
            assertThat(batches.handled).containsKey("flaky");
            assertThat(batches.sizes).allSatisfy(size -> assertThat(size).isBetween(1, 10));
            assertThat(batches.sizes).as("messages that waited together came in one call").anySatisfy(size ->
                    assertThat(size).isGreaterThan(1));
            assertThat(batchApp.rejections).extracting(r -> r.envelope().orElseThrow().messageId() + " "
                    + r.condition()).containsExactlyInAnyOrder(
                    "bad-json " + RejectionConditions.DECODE_ERROR,
                    "invalid " + RejectionConditions.VALIDATION_FAILED,
                    "broken " + RejectionConditions.PERMANENT_FAILURE);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                assertThat(broker.messageCount(readings)).isZero();
                assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(readings))).isEqualTo(3);
            });
        }
    }

    static class TransactionalBatch {
        @AcemqListener(address = "${test.queue}", batch = "true", databaseTransaction = "true")
        void onBatch(List<String> bodies) {
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(TransactionalBatch.class)
    static class TransactionalBatchApp {
    }

    @Test
    void aBatchListenerWithADatabaseTransactionNeedsTheJdbcStoreAndFailsTheStartSayingSo() {
        assertThatThrownBy(() -> AcemqListenerIT.start(TransactionalBatchApp.class, "test.queue=q-" + UUID.randomUUID())
                .close())
                .isInstanceOf(IllegalStateException.class)
                .hasStackTraceContaining("TransactionalBatch.onBatch) has databaseTransaction, which needs the JDBC "
                        + "store");
    }
}

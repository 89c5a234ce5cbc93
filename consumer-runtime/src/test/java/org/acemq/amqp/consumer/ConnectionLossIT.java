package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Broker-side faults while deliveries are in hand: a dropped TCP connection, a broker restart (persistent journal), and
 * a link the broker detaches. The runtime reconnects or re-attaches by itself; deliveries it held on the dead
 * connection or link are reported abandoned (never settled, because protonj2 would drop the disposition while
 * reporting success), the broker redelivers them, and the store absorbs the copies: every message has its effect
 * exactly once and nothing is lost.
 *
 * <p>Each test runs the first {@value #BEFORE_FAULT} messages, then blocks the handlers so that
 * {@code concurrency} deliveries are being handled and up to {@code prefetch} are waiting when the fault hits.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ConnectionLossIT {

    private static final int TOTAL = 300;
    private static final int BEFORE_FAULT = 50;
    private static final int CONCURRENCY = 4;
    private static final int PREFETCH = 20;

    private static EmbeddedArtemis broker;
    private final CountDownLatch resume = new CountDownLatch(1);

    @BeforeAll
    static void startBroker() {
        broker = E2e.broker(true);
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @AfterEach
    void unblock() {
        resume.countDown();
    }

    @Test
    void droppedConnectionIsReEstablishedAndNothingIsLostOrDoneTwice() {
        runThroughFault("loss-drop", () -> assertThat(broker.dropAllConnections()).isPositive(), true);
    }

    @Test
    void brokerRestartIsSurvivedWithThePersistentBacklogProcessedOnce() {
        runThroughFault("loss-restart", () -> broker.restart(), true);
    }

    @Test
    void aLinkTheBrokerDetachesIsReAttachedAndConsumptionContinues() {
        String q = "loss-detach";
        runThroughFault(q, () -> assertThat(broker.detachConsumers(q)).isEqualTo(1), false);
    }

    private void runThroughFault(String q, Runnable fault, boolean connectionFault) {
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.sendBatch(q, TOTAL, i -> q + "-" + i);
        }
        E2e.Effects effects = new E2e.Effects();
        AtomicInteger started = new AtomicInteger();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        try (AmqpConsumer consumer = E2e.consumer(broker, q).store(store).observer(observer)
                .subscribe(Subscription.builder(q, e -> {
                    if (started.incrementAndGet() > BEFORE_FAULT) {
                        E2e.await(resume);
                    }
                    effects.record(e.id());
                }).concurrency(CONCURRENCY).prefetch(PREFETCH).inProgressDelay(E2e.IN_PROGRESS_DELAY).build())
                .start()) {
            // Every handler thread blocked and every credit granted used up: the held set no longer changes.
            await().until(() -> started.get() == BEFORE_FAULT + CONCURRENCY
                    && consumer.health().subscriptions().get(0).credit() == 0);
            int held = consumer.health().subscriptions().get(0).inFlight();
            assertThat(held).as("deliveries in hand at the fault").isGreaterThan(CONCURRENCY)
                    .isLessThanOrEqualTo(CONCURRENCY + PREFETCH);
            assertThat(effects.total()).isEqualTo(BEFORE_FAULT);

            fault.run();

            if (connectionFault) {
                await().until(() -> observer.interruptions() >= 1);
                await().atMost(Duration.ofSeconds(20)).until(() -> consumer.health().connected());
                // One outage is reported once, however many reconnect attempts failed during it.
                assertThat(observer.interruptions()).isEqualTo(1);
            } else {
                assertThat(observer.interruptions()).isEqualTo(0);
            }
            // The link is back (re-attached by protonj2 after a reconnect, or by the runtime after a detach).
            await().atMost(Duration.ofSeconds(20)).until(() -> broker.consumerCount(q) == 1
                    && consumer.health().subscriptions().get(0).attached());

            resume.countDown();

            await().atMost(Duration.ofSeconds(40)).until(() -> effects.total() >= TOTAL
                    && broker.messageCount(q) == 0);
            // Every delivery a handler thread ran on the dead connection/link: handled (its effect happened, its
            // claim was confirmed) but never settled, so the broker redelivered it and the store absorbed the copy.
            // Deliveries claimed but not started were released, not run, and abandoned too: their copies run once.
            // The others in hand were still queued in the client, untouched; the broker simply sends them again.
            await().until(() -> observer.abandonments() >= CONCURRENCY);
            assertThat(observer.abandonments()).isLessThanOrEqualTo(held);
            assertThat(observer.count(Outcome.ACCEPTED, SettleReason.DUPLICATE))
                    .isGreaterThanOrEqualTo(CONCURRENCY);
            assertThat(consumer.health().healthy()).isTrue();
        }
        assertThat(effects.total()).as("effects").isEqualTo(TOTAL);
        assertThat(effects.ids()).hasSize(TOTAL);
        assertThat(effects.repeated()).as("ids with more than one effect").isEmpty();
        assertThat(observer.settlements()).allSatisfy(s -> assertThat(s.reason())
                .isIn(SettleReason.PROCESSED, SettleReason.DUPLICATE, SettleReason.IN_PROGRESS));
        assertThat(broker.messageCount(q)).isZero();
        assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();
    }
}

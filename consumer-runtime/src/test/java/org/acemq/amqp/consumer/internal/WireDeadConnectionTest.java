package org.acemq.amqp.consumer.internal;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.ScriptedPeer;
import org.acemq.amqp.consumer.StandardErrorTee;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A delivery belongs to the connection it arrived on. The race it closes: the intake leader takes a
 * delivery from protonj2's queue, the connection drops, protonj2 reports the interruption (the runtime makes the
 * successor link current), and only then does the leader decide the delivery's link. Before the fix it was given the
 * successor, which is valid: its handler ran after the loss, its {@code accept()} went to a dead engine (protonj2 logs
 * {@code ENGINE_SHUTDOWN} and drops it) and it was reported {@code accepted}. The race is made deterministic by
 * holding the leader exactly there while the test drops the connection and waits for the runtime to learn of it: the
 * consumer's {@link Ticker} (public, replaceable) is read by {@link Intake#take} when a delivery has left the client's
 * queue and just before its link is decided, and the test's ticker blocks that first read. Handler threads are free
 * throughout.
 */
@Timeout(30)
class WireDeadConnectionTest {

    private static final int BUDGET = 20;

    @Test
    void aDeliveryTakenBeforeTheLossNeverRunsAfterItAndIsAbandonedNotAccepted() throws Exception {
        RecordingObserver reports = new RecordingObserver();
        List<String> handled = new CopyOnWriteArrayList<>();
        AtomicBoolean redelivered = new AtomicBoolean();
        CountDownLatch taken = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        Ticker holdsTheFirstTake = () -> {
            if (first.get() && readByIntakeTake() && first.compareAndSet(true, false)) {
                taken.countDown();
                try {
                    proceed.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return System.nanoTime();
        };
        try (ProtonTestServer peer1 = new ProtonTestServer(); ProtonTestServer peer2 = new ProtonTestServer();
             StandardErrorTee log = new StandardErrorTee()) {
            expectConnectAndBegin(peer1);
            peer1.expectAttach().ofReceiver().withName("orders-link").respond();
            peer1.expectFlow().withLinkCredit(BUDGET);
            peer1.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).queue();
            peer1.start();

            expectConnectAndBegin(peer2);
            peer2.expectAttach().ofReceiver().withName("orders-link").respond();
            // protonj2 re-grants what was left: 20 - 1 delivered
            peer2.expectFlow().withLinkCredit(BUDGET - 1).withDrain(false);
            peer2.start();

            URI failover = peer2.getServerURI();
            ConnectionSettings settings = ScriptedPeer.settings(peer1)
                    .reconnect(true)
                    .failover(failover.getHost(), failover.getPort())
                    .reconnectDelay(Duration.ofMillis(10), Duration.ofMillis(100))
                    .build();
            try (AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(settings)
                    .store(InMemoryIdempotencyStore.ofDefaults())
                    .observer(reports)
                    .ticker(holdsTheFirstTake)
                    .creditCheckInterval(Duration.ofMinutes(1))
                    .subscribe(Subscription.builder("orders", e -> handled.add(
                                    (redelivered.get() ? "redelivered " : "") + e.body(String.class)))
                            .linkName("orders-link").concurrency(2).prefetch(BUDGET - 2).build())
                    .start()) {
                assertThat(taken.await(5, TimeUnit.SECONDS)).as("the leader took ord-1").isTrue();
                peer1.waitForScriptToComplete(5, TimeUnit.SECONDS);

                peer1.dropConnection();
                await().until(() -> reports.interruptions() == 1);
                peer2.waitForScriptToComplete(5, TimeUnit.SECONDS); // reconnected: the successor link is attached
                proceed.countDown();

                await().untilAsserted(() -> assertThat(reports.abandonments())
                        .as("abandoned (handled %s, settled %s)", handled, reports.settlements()).isEqualTo(1));
                assertThat(handled).as("no handler ran on a delivery of the lost connection").isEmpty();
                assertThat(reports.settlements()).as("nothing reported settled").isEmpty();

                // The broker redelivers it on the new connection: it runs once and is accepted there.
                redelivered.set(true);
                peer2.expectDisposition().withFirst(0).withSettled(true).withState().accepted();
                peer2.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                        .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).now();
                peer2.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> reports.settlements().size() == 1);
                assertThat(reports.settlements()).extracting(s -> s.outcome() + "/" + s.reason())
                        .containsExactly("ACCEPTED/PROCESSED");
                assertThat(handled).containsExactly("redelivered one");
                assertThat(reports.abandonments()).isEqualTo(1);

                // Strict: nothing went out for the dead delivery (no disposition, no grant) before the close's drain.
                ScriptedPeer.expectGracefulClose(peer2, 1, BUDGET - 2);
            }
            peer2.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(log.lines("ENGINE_SHUTDOWN")).as("no disposition was attempted on the dead engine").isEmpty();
        }
    }

    /** @return whether the ticker is being read by {@link Intake#take}, on the intake leader (a few frames up) */
    private static boolean readByIntakeTake() {
        return StackWalker.getInstance().walk(frames -> frames.limit(6).anyMatch(
                f -> f.getClassName().equals(Intake.class.getName()) && f.getMethodName().equals("take")));
    }
}

package org.acemq.amqp.consumer.internal;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ScriptedPeer;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Dispositions handed to the I/O thread while it is busy are written together: one task and one flush for the batch
 * (protonj2's own {@code accept()} queues a task and flushes the socket once per delivery, which is most of the system
 * time of a busy consumer and makes the broker read them one by one). Deterministic: the first hand-over occupies the
 * I/O thread with a task of the test's, the other handlers hand theirs over behind it, and only then is it let go.
 */
@Timeout(30)
class WireDispositionBatchTest {

    private static final int HANDLERS = 4;
    private static final int WINDOW = 100;

    @AfterEach
    void removeProbes() {
        ReceiverLink.beforeSettle = null;
        Dispositions.afterBatch = null;
    }

    @Test
    void dispositionsHandedOverWhileTheIoThreadIsBusyAreWrittenByOneTaskAndAllReachThePeer() throws Exception {
        RecordingObserver reports = new RecordingObserver();
        List<Integer> batches = new CopyOnWriteArrayList<>();
        CountDownLatch allRunning = new CountDownLatch(HANDLERS);
        CountDownLatch occupied = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        Dispositions.afterBatch = batches::add;
        ReceiverLink.beforeSettle = (link, delivery) -> {
            if (!first.compareAndSet(true, false)) {
                return;
            }
            link.hooks().onIoThread(() -> {
                occupied.countDown();
                block(letGo);
            });
            block(occupied);
        };
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(WINDOW);
            for (int id = 0; id < HANDLERS; id++) {
                peer.remoteTransfer().withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id}).withMore(false)
                        .withSettled(false).withMessageFormat(0).withPayload(encoded("m-" + id, "m-" + id)).queue();
            }
            for (int id = 0; id < HANDLERS; id++) {
                peer.expectDisposition().withSettled(true).withState().accepted();
            }
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                    .observer(reports)
                    .subscribe(Subscription.builder("orders", e -> {
                        allRunning.countDown();
                        allRunning.await(); // every delivery was read before the first is settled
                    }).concurrency(HANDLERS).prefetch(WINDOW - HANDLERS).build())
                    .start()) {
                // all four handed over (reported settled) while the I/O thread is still occupied ...
                await().until(() -> reports.endings().size() == HANDLERS);
                assertThat(batches).as("nothing written while the I/O thread is busy").isEmpty();
                letGo.countDown();
                // ... are written by one task
                await().until(() -> !batches.isEmpty());
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(batches).containsExactly(HANDLERS);
                assertThat(reports.endings()).containsOnly("ACCEPTED/PROCESSED");
                assertThat(reports.dispositionsDropped()).isZero();
                ScriptedPeer.expectGracefulClose(peer, HANDLERS, WINDOW - HANDLERS);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    private static void block(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

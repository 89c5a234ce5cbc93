package org.acemq.amqp.consumer.internal;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
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
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionRemotelyClosedException;
import org.apache.qpid.protonj2.engine.Engine;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A disposition handed to the connection's I/O thread while the connection is alive, and the connection failing
 * before that thread writes it (found as 5,832 {@code ENGINE_SHUTDOWN} lines in a RabbitMQ soak, each a disposition
 * that waited behind a saturated I/O thread). protonj2's own {@code accept()} queues a task that then meets a shut-down
 * engine, which throws and is logged as a WARN with a stack trace. The runtime's task checks the engine on the I/O
 * thread first, drops the disposition and counts it.
 *
 * <p>Deterministic: when the runtime is about to hand over the first disposition ({@link ReceiverLink#beforeSettle}),
 * the test occupies the I/O thread with a task of its own, lets the hand-over happen (the disposition queues behind
 * it), and only then lets that task fail the engine exactly as protonj2 does on a transport error
 * ({@code engineFailed} with a connection-closed exception, on the I/O thread). protonj2 then reconnects to the second
 * peer, which redelivers the message.
 */
@Timeout(30)
class WireDispositionDroppedTest {

    private static final int BUDGET = 20;

    @AfterEach
    void removeProbe() {
        ReceiverLink.beforeSettle = null;
    }

    @Test
    void aDispositionTheConnectionFailsBeforeItIsWrittenIsDroppedAndCountedNotThrownAtTheDeadEngine()
            throws Exception {
        RecordingObserver reports = new RecordingObserver();
        List<String> handled = new CopyOnWriteArrayList<>();
        CountDownLatch occupied = new CountDownLatch(1);
        CountDownLatch fail = new CountDownLatch(1);
        CountDownLatch failed = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        ReceiverLink.beforeSettle = (link, delivery) -> {
            if (!first.compareAndSet(true, false)) {
                return;
            }
            Engine engine = EngineHooks.engineDelivery(delivery).getLink().getEngine();
            link.hooks().onIoThread(() -> {
                occupied.countDown();
                try {
                    fail.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                // What protonj2's ClientTransportListener.transportError does, on this same thread.
                engine.engineFailed(new ClientConnectionRemotelyClosedException("Connection reset",
                        new IOException("Connection reset")));
                failed.countDown();
            });
            try {
                occupied.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        try (ProtonTestServer peer1 = new ProtonTestServer(); ProtonTestServer peer2 = new ProtonTestServer();
             StandardErrorTee log = new StandardErrorTee()) {
            expectConnectAndBegin(peer1);
            peer1.expectAttach().ofReceiver().withName("orders-link").respond();
            peer1.expectFlow().withLinkCredit(BUDGET);
            peer1.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).queue();
            // A failed protonj2 engine still tries to write a close carrying its error (into a dead socket, on a real
            // transport error); after that frame the first peer must receive nothing, in particular no disposition.
            peer1.expectClose().withError("amqp:internal-error", "Connection reset");
            peer1.start();

            expectConnectAndBegin(peer2);
            peer2.expectAttach().ofReceiver().withName("orders-link").respond();
            peer2.expectFlow().withDrain(false);
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
                    .creditCheckInterval(Duration.ofMinutes(1))
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.body(String.class)))
                            .linkName("orders-link").concurrency(2).prefetch(BUDGET - 2).build())
                    .start()) {
                // The accept is handed over while the connection is alive, so it is reported settled ...
                await().until(() -> reports.endings().contains("ACCEPTED/PROCESSED"));
                // ... and the connection fails before the I/O thread comes to write it.
                fail.countDown();
                assertThat(failed.await(5, TimeUnit.SECONDS)).as("the engine was failed").isTrue();

                await().untilAsserted(() -> assertThat(reports.dispositionsDropped()).as("events %s", reports.endings())
                        .isEqualTo(1));
                assertThat(reports.endings()).as("dropped is reported after settled, nothing abandoned")
                        .containsExactly("ACCEPTED/PROCESSED", "dropped");
                await().until(() -> reports.interruptions() == 1);
                peer2.waitForScriptToComplete(5, TimeUnit.SECONDS); // reconnected and re-attached
                // Nothing went to the first peer after the loss (the driver fails on any unexpected frame).
                peer1.waitForScriptToComplete(5, TimeUnit.SECONDS);

                // The broker redelivers it on the new connection: a duplicate, accepted without running the handler.
                peer2.expectDisposition().withFirst(0).withSettled(true).withState().accepted();
                peer2.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                        .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).now();
                peer2.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> reports.endings().size() == 3);
                assertThat(reports.endings()).containsExactly("ACCEPTED/PROCESSED", "dropped", "ACCEPTED/DUPLICATE");
                assertThat(handled).as("the handler ran once").containsExactly("one");

                ScriptedPeer.expectGracefulClose(peer2, 1, BUDGET - 2);
            }
            peer2.waitForScriptToComplete(5, TimeUnit.SECONDS);
            peer1.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(log.lines("ENGINE_SHUTDOWN")).as("no disposition was attempted on the dead engine").isEmpty();
            assertThat(log.lines("EngineShutdownException")).isEmpty();
            assertThat(reports.dispositionsDropped()).isEqualTo(1);
        }
    }
}

package org.acemq.amqp.consumer.internal.engine;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.StandardErrorTee;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionRemotelyClosedException;
import org.apache.qpid.protonj2.engine.Engine;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A disposition handed to the connection's I/O thread while the connection is alive, and the connection failing
 * before that thread writes it (seen in a RabbitMQ soak as thousands of {@code ENGINE_SHUTDOWN} lines, each a
 * disposition that waited behind a saturated I/O thread). protonj2's own {@code accept()} queues a task that then
 * meets a shut-down engine, which throws and is logged as a WARN with a stack trace. {@link HookedLink#settle}
 * checks the engine on the I/O thread first, drops the disposition and runs its {@code dropped} callback (which the
 * runtime turns into the observer's dropped-disposition count).
 *
 * <p>Deterministic: the test occupies the link's I/O thread with a task of its own, hands the disposition over (it
 * queues behind that task), and only then lets that task fail the engine exactly as protonj2 does on a transport
 * error ({@code engineFailed} with a connection-closed exception, on the I/O thread).
 */
@Timeout(30)
class WireDispositionDroppedTest {

    @Test
    void aDispositionTheConnectionFailsBeforeItIsWrittenIsDroppedAndReportedNotThrownAtTheDeadEngine()
            throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer(); StandardErrorTee log = new StandardErrorTee()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(10);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withSettled(false).withMessageFormat(0).withPayload(encoded("ord-1", "one")).queue();
            // A failed protonj2 engine still tries to write a close carrying its error (into a dead socket, on a real
            // transport error); after that frame the peer must receive nothing, in particular no disposition.
            peer.expectClose().withError("amqp:internal-error", "Connection reset");
            peer.start();

            URI uri = peer.getServerURI();
            try (Client client = Client.create();
                 Connection connection = client.connect(uri.getHost(), uri.getPort())) {
                Receiver receiver = EngineWire.openReceiver(connection);
                LinkHooks link = (LinkHooks) ProtonInternals.forConsumer().hook(receiver, new EngineWire.NoEvents());
                link.grant(10);
                Delivery delivery = receiver.receive(5, TimeUnit.SECONDS);
                assertThat(delivery).isNotNull();
                Engine engine = EngineDeliveries.engineDelivery(delivery).getLink().getEngine();

                CountDownLatch occupied = new CountDownLatch(1);
                CountDownLatch fail = new CountDownLatch(1);
                link.onIoThread(() -> {
                    occupied.countDown();
                    EngineWire.await(fail);
                    // What protonj2's ClientTransportListener.transportError does, on this same thread.
                    engine.engineFailed(new ClientConnectionRemotelyClosedException("Connection reset",
                            new IOException("Connection reset")));
                });
                EngineWire.await(occupied);

                AtomicReference<String> droppedOn = new AtomicReference<>();
                CountDownLatch dropped = new CountDownLatch(1);
                assertThat(link.settle(delivery, Outcome.ACCEPTED, null, null, () -> {
                    droppedOn.set(Thread.currentThread().getName());
                    dropped.countDown();
                })).as("handed over while the connection is alive").isEqualTo(HookedLink.Handover.QUEUED);
                assertThat(dropped.getCount()).as("not dropped before the I/O thread came to it").isEqualTo(1);

                fail.countDown();
                assertThat(dropped.await(5, TimeUnit.SECONDS)).as("the disposition was reported dropped").isTrue();
                assertThat(droppedOn.get()).as("reported on the I/O thread").isNotEqualTo(Thread.currentThread()
                        .getName());
                assertThat(EngineDeliveries.engineDelivery(delivery).isSettled()).as("never written").isFalse();
                // Nothing went to the peer after the close (the driver fails on any unexpected frame).
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
            assertThat(log.lines("ENGINE_SHUTDOWN")).as("no disposition was attempted on the dead engine").isEmpty();
            assertThat(log.lines("EngineShutdownException")).isEmpty();
        }
    }
}

package org.acemq.amqp.consumer.internal.engine;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.Outcome;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Dispositions handed to the I/O thread while it is busy are written together, by the one task the first hand-over
 * queued (protonj2's own {@code accept()} queues a task and flushes the socket once per delivery, which is most of
 * the system time of a busy consumer and makes the broker read them one by one). Deterministic: the test occupies the
 * link's I/O thread with a task of its own, hands four dispositions over through {@link HookedLink#settle}
 * with a marker task queued between the second and the third, and only then lets the I/O thread go. When the marker
 * runs, all four are settled in the engine, the two handed over after it too: the task queued by the first hand-over
 * wrote them. (How many tasks the hand-overs queue, without a wire: {@link DispositionsTest}.)
 */
@Timeout(30)
class WireDispositionBatchTest {

    private static final int DELIVERIES = 4;
    private static final int WINDOW = 100;

    @Test
    void dispositionsHandedOverWhileTheIoThreadIsBusyAreWrittenByTheTaskTheFirstQueuedAndAllReachThePeer()
            throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(WINDOW);
            for (int id = 0; id < DELIVERIES; id++) {
                peer.remoteTransfer().withDeliveryId(id).withDeliveryTag(new byte[] {(byte) id}).withMore(false)
                        .withSettled(false).withMessageFormat(0).withPayload(encoded("m-" + id, "m-" + id)).queue();
            }
            for (int id = 0; id < DELIVERIES; id++) {
                peer.expectDisposition().withFirst(id).withSettled(true).withState().accepted();
            }
            peer.start();

            URI uri = peer.getServerURI();
            try (Client client = Client.create();
                 Connection connection = client.connect(uri.getHost(), uri.getPort())) {
                Receiver receiver = EngineWire.openReceiver(connection);
                LinkHooks link = (LinkHooks) ProtonInternals.forConsumer().hook(receiver, new EngineWire.NoEvents());
                link.grant(WINDOW);
                List<Delivery> deliveries = new ArrayList<>();
                for (int i = 0; i < DELIVERIES; i++) {
                    Delivery d = receiver.receive(5, TimeUnit.SECONDS);
                    assertThat(d).as("delivery %s", i).isNotNull();
                    deliveries.add(d);
                }

                CountDownLatch occupied = new CountDownLatch(1);
                CountDownLatch letGo = new CountDownLatch(1);
                link.onIoThread(() -> {
                    occupied.countDown();
                    EngineWire.await(letGo);
                });
                EngineWire.await(occupied);

                AtomicInteger dropped = new AtomicInteger();
                List<Boolean> settledWhenMarkerRan = new CopyOnWriteArrayList<>();
                CountDownLatch markerRan = new CountDownLatch(1);
                for (int i = 0; i < DELIVERIES; i++) {
                    if (i == 2) {
                        link.onIoThread(() -> {
                            for (Delivery d : deliveries) {
                                settledWhenMarkerRan.add(EngineDeliveries.engineDelivery(d).isSettled());
                            }
                            markerRan.countDown();
                        });
                    }
                    assertThat(link.settle(deliveries.get(i), Outcome.ACCEPTED, null, null, dropped::incrementAndGet))
                            .isEqualTo(HookedLink.Handover.QUEUED);
                }
                assertThat(settledWhenMarkerRan).as("nothing runs while the I/O thread is busy").isEmpty();
                letGo.countDown();

                assertThat(markerRan.await(5, TimeUnit.SECONDS)).isTrue();
                assertThat(settledWhenMarkerRan).as("the two handed over after the marker were written before it")
                        .containsExactly(true, true, true, true);
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(dropped).hasValue(0);
                peer.expectClose().respond();
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }
}

package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;

/** One subscription on a scripted peer that sends a list of payloads: the fixture of the wire tests of bad input. */
abstract class WireRunTest {

    final List<Envelope> handled = new CopyOnWriteArrayList<>();
    final RecordingObserver observer = new RecordingObserver();
    final InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();

    /** Sends {@code payloads} one after the other; {@code expectations} scripts one disposition per payload. */
    void run(Subscription.Builder subscription, List<byte[]> payloads, Consumer<ProtonTestServer> expectations)
            throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(101);
            for (int i = 0; i < payloads.size(); i++) {
                peer.remoteTransfer().withDeliveryId(i).withDeliveryTag(new byte[] {(byte) i}).withMore(false)
                        .withMessageFormat(0).withPayload(payloads.get(i)).queue();
            }
            expectations.accept(peer);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(subscription.build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == payloads.size());
                ScriptedPeer.expectGracefulClose(peer, payloads.size(), 101 - payloads.size());
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    Subscription.Builder orders() {
        return Subscription.builder("orders", handled::add);
    }

    static byte[] withProperty(Object messageId, String property, Object value) throws Exception {
        Message<String> message = Message.create("body").property(property, value);
        if (messageId != null) {
            message.messageId(messageId);
        }
        ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
        byte[] bytes = new byte[buffer.getReadableBytes()];
        buffer.readBytes(bytes, 0, bytes.length);
        return bytes;
    }

}

package org.acemq.amqp.consumer;

import java.net.URI;
import java.time.Duration;
import org.acemq.amqp.api.IdempotencyStore;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;

/** Helpers for tests that script the broker side with the protonj2 test driver. */
public final class ScriptedPeer {

    private ScriptedPeer() {
    }

    /** SASL anonymous, open and begin, each answered. */
    public static void expectConnectAndBegin(ProtonTestServer peer) {
        peer.expectSASLAnonymousConnect();
        peer.expectOpen().respond();
        peer.expectBegin().respond();
    }

    /** @return a message with this id (any AMQP id type, as protonj2 encodes it) and body, as transfer payload bytes */
    public static byte[] encoded(Object messageId, String body) {
        try {
            Message<String> message = Message.create(body);
            if (messageId != null) {
                message.messageId(messageId);
            }
            ProtonBuffer buffer = message.toAdvancedMessage().encode(null);
            byte[] bytes = new byte[buffer.getReadableBytes()];
            buffer.readBytes(bytes, 0, bytes.length);
            return bytes;
        } catch (ClientException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Scripts what a graceful close puts on the wire: a drain of the link (answered: the unused credit is used up),
     * then detach, end and close.
     *
     * @param deliveryCount how many transfers the link has carried so far
     * @param credit the link credit outstanding at that point
     */
    public static void expectGracefulClose(ProtonTestServer peer, long deliveryCount, int credit) {
        peer.expectFlow().withDrain(true).withLinkCredit(credit).withDeliveryCount(deliveryCount)
                .respond().withDrain(true).withLinkCredit(0).withDeliveryCount(deliveryCount + credit);
        peer.expectDetach().respond();
        peer.expectEnd().respond();
        peer.expectClose().respond();
    }

    /**
     * A consumer of the scripted peer (no reconnect) with this store. It starts fail-fast, so that when
     * {@code start()} returns its links are attached and the test may drive the peer; and its fallback credit check
     * (used only when the engine hooks are off) waits a minute, so every flow on the wire is one the script expects.
     */
    public static AmqpConsumer.Builder consumer(ProtonTestServer peer, IdempotencyStore store) {
        return AmqpConsumer.builder()
                .connection(settings(peer).build())
                .store(store)
                .failFastStart(true)
                .creditCheckInterval(Duration.ofMinutes(1));
    }

    /**
     * Waits until the peer has read {@code count} performatives (open, begin, attach, flow, ... in script order). A test
     * that sends transfers itself must wait for the consumer's first flow to reach the peer: the runtime hands its
     * grants to the I/O thread without waiting, so {@code start()} (and the credit health shows) can be ahead of the
     * wire, and a transfer sent before the flow makes the flow carry another delivery-count than the script expects.
     */
    public static void awaitPerformatives(ProtonTestServer peer, int count) {
        org.awaitility.Awaitility.await().until(() -> peer.getDriver().getPerformativeCount() >= count);
    }

    public static ConnectionSettings.Builder settings(ProtonTestServer peer) {
        URI uri = peer.getServerURI();
        return ConnectionSettings.builder(uri.getHost(), uri.getPort()).reconnect(false);
    }
}

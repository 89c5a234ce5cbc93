package org.acemq.amqp.consumer;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.qpid.protonj2.test.driver.AMQPTestDriver;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Accepted;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Modified;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Rejected;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Released;
import org.apache.qpid.protonj2.test.driver.codec.primitives.UnsignedShort;
import org.apache.qpid.protonj2.test.driver.codec.transport.Disposition;
import org.apache.qpid.protonj2.test.driver.codec.transport.Flow;
import org.apache.qpid.protonj2.test.driver.actions.FlowInjectAction;
import org.apache.qpid.protonj2.test.driver.expectations.DispositionExpectation;
import org.apache.qpid.protonj2.test.driver.expectations.FlowExpectation;

/**
 * A tolerant stretch of a scripted peer's script, for the parts of a test where the order of flows and dispositions
 * across links is not deterministic (several dispatcher threads, idle drains on timers). It accepts any number of
 * flows and dispositions in any order, records them for assertions, and answers every drain the way a broker with
 * nothing to send does (link-credit 0, delivery-count advanced by the unused credit). It ends with the detach of
 * every link, end and close, so {@code peer.waitForScriptToComplete} after {@code consumer.close()} still proves
 * that the consumer shut down cleanly.
 *
 * <p>The peer's own frames in such a stretch are sent with {@link #transfer} ({@code now()}), driven by the test.
 */
final class WireLog {

    /** A flow frame the peer received; numbers are -1 when the field was absent. */
    record FlowFrame(int channel, long handle, long credit, long deliveryCount, boolean drain, long incomingWindow,
                     long nextIncomingId) {
    }

    /** A disposition frame the peer received. */
    record DispositionFrame(int channel, long first, long last, boolean settled, Object state, long nanos) {

        boolean covers(long deliveryId) {
            return first <= deliveryId && deliveryId <= last;
        }

        String outcome() {
            if (state instanceof Accepted) {
                return "accepted";
            } else if (state instanceof Released) {
                return "released";
            } else if (state instanceof Modified m) {
                return "modified(failed=" + m.getDeliveryFailed() + ")";
            } else if (state instanceof Rejected r) {
                return "rejected(" + (r.getError() == null ? null : r.getError().getCondition()) + ")";
            }
            return String.valueOf(state);
        }
    }

    final List<FlowFrame> flows = new CopyOnWriteArrayList<>();
    final List<DispositionFrame> dispositions = new CopyOnWriteArrayList<>();

    /**
     * Appends the tolerant stretch to the script: up to {@code frames} flows and dispositions in any order, then
     * {@code links} detaches, {@code sessions} ends and the close, each answered.
     */
    static WireLog acceptAnythingThenClose(ProtonTestServer peer, int frames, int links, int sessions) {
        WireLog log = new WireLog();
        AMQPTestDriver driver = peer.getDriver();
        for (int i = 0; i < frames; i++) {
            driver.addScriptedElement(log.new AnyFlow(driver));
            driver.addScriptedElement(log.new AnyDisposition(driver));
        }
        for (int i = 0; i < links; i++) {
            peer.expectDetach().respond();
        }
        for (int i = 0; i < sessions; i++) {
            peer.expectEnd().respond();
        }
        peer.expectClose().respond();
        return log;
    }

    /** Sends one complete single-frame transfer now. */
    static void transfer(ProtonTestServer peer, int channel, int handle, int deliveryId, byte[] payload) {
        peer.remoteTransfer().withHandle(handle).withDeliveryId(deliveryId)
                .withDeliveryTag(new byte[] {(byte) deliveryId, (byte) (deliveryId >> 8)})
                .withMore(false).withMessageFormat(0).withPayload(payload).onChannel(channel).now();
    }

    /** Sends one payload-less aborted transfer now. */
    static void abort(ProtonTestServer peer, int channel, int handle, int deliveryId) {
        peer.remoteTransfer().withHandle(handle).withDeliveryId(deliveryId)
                .withDeliveryTag(new byte[] {(byte) deliveryId, (byte) (deliveryId >> 8)})
                .withMore(false).withAborted(true).withMessageFormat(0).onChannel(channel).now();
    }

    /**
     * @return how many more transfers the peer may send on this link after {@code sent} transfers: what the last
     *     flow allows (its delivery-count plus its link-credit) minus what was sent; -1 before any flow
     */
    long creditLeft(long handle, long sent) {
        List<FlowFrame> mine = flows(handle);
        if (mine.isEmpty()) {
            return -1;
        }
        FlowFrame last = mine.get(mine.size() - 1);
        return last.deliveryCount() + last.credit() - sent;
    }

    List<FlowFrame> flows(long handle) {
        return flows.stream().filter(f -> f.handle() == handle).collect(Collectors.toList());
    }

    /** @return the flows of this link that grant credit (not drains) */
    List<FlowFrame> grants(long handle) {
        return flows.stream().filter(f -> f.handle() == handle && !f.drain() && f.credit() > 0)
                .collect(Collectors.toList());
    }

    List<FlowFrame> drains(long handle) {
        return flows.stream().filter(f -> f.handle() == handle && f.drain()).collect(Collectors.toList());
    }

    /** @return every disposition sent for this delivery id on this channel */
    List<DispositionFrame> dispositions(int channel, long deliveryId) {
        return dispositions.stream().filter(d -> d.channel() == channel && d.covers(deliveryId))
                .collect(Collectors.toList());
    }

    /** @return the outcome sent for this delivery id on this channel, or null */
    String outcome(int channel, long deliveryId) {
        return dispositions.stream().filter(d -> d.channel() == channel && d.covers(deliveryId))
                .map(DispositionFrame::outcome).findFirst().orElse(null);
    }

    DispositionFrame disposition(int channel, long deliveryId) {
        return dispositions.stream().filter(d -> d.channel() == channel && d.covers(deliveryId)).findFirst()
                .orElse(null);
    }

    private static long number(Number n) {
        return n == null ? -1 : n.longValue();
    }

    /** Matches any flow; records it; answers a drain with credit 0 and the delivery-count advanced. */
    private final class AnyFlow extends FlowExpectation {

        AnyFlow(AMQPTestDriver driver) {
            super(driver);
            optional();
        }

        @Override
        public void handleFlow(int frameSize, Flow flow, ByteBuffer payload, int channel, AMQPTestDriver context) {
            super.handleFlow(frameSize, flow, payload, channel, context);
            FlowFrame frame = new FlowFrame(channel, number(flow.getHandle()), number(flow.getLinkCredit()),
                    number(flow.getDeliveryCount()), Boolean.TRUE.equals(flow.getDrain()),
                    number(flow.getIncomingWindow()), number(flow.getNextIncomingId()));
            flows.add(frame);
            if (frame.drain() && frame.handle() >= 0) {
                UnsignedShort local = driver.sessions().getSessionFromRemoteChannel(UnsignedShort.valueOf(channel))
                        .getLocalChannel();
                FlowInjectAction answer = new FlowInjectAction(driver);
                answer.withHandle(frame.handle()).withDrain(true).withLinkCredit(0)
                        .withDeliveryCount(Math.max(0, frame.deliveryCount()) + Math.max(0, frame.credit()))
                        .withIncomingWindow(Integer.MAX_VALUE).withOutgoingWindow(0)
                        .withNextIncomingId(flow.getNextOutgoingId().longValue())
                        .withNextOutgoingId(flow.getNextIncomingId() == null ? 0 : flow.getNextIncomingId().longValue())
                        .onChannel(local.intValue());
                answer.now();
            }
        }
    }

    /** Matches any disposition and records it. */
    private final class AnyDisposition extends DispositionExpectation {

        AnyDisposition(AMQPTestDriver driver) {
            super(driver);
            optional();
        }

        @Override
        public void handleDisposition(int frameSize, Disposition disposition, ByteBuffer payload, int channel,
                                      AMQPTestDriver context) {
            super.handleDisposition(frameSize, disposition, payload, channel, context);
            long first = number(disposition.getFirst());
            long last = disposition.getLast() == null ? first : disposition.getLast().longValue();
            dispositions.add(new DispositionFrame(channel, first, last, Boolean.TRUE.equals(disposition.getSettled()),
                    disposition.getState(), System.nanoTime()));
        }
    }
}

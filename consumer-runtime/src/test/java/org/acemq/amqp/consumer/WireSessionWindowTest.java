package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Seed 004 (QPID-8751) and protonj2's own session-window trap, on one session shared by two subscriptions
 * ({@code sessionGroup("g")}): A (concurrency 1, prefetch 7: W = 8, re-grants in batches of 2) and B (concurrency 1,
 * prefetch 0: W = 1, its handler held on a latch so that it never has idle credit while the scenario runs).
 *
 * <p>protonj2 advertises incoming-window = session incoming capacity / 64 KiB max-frame-size; by default 100 MiB /
 * 64 KiB = 1600 frames. The same stalls happen with 1600 frames, but the scripted peer sends frames too slowly for
 * the timings here to be deterministic, so the tests use the package-private, non-API builder knob
 * {@code sessionIncomingCapacity(4 * 65536)}: a window of <b>4 frames</b> (asserted on the Begin and on every
 * flow). After 4 frames a compliant sender must stop sending on the whole session, for every link, until the client
 * writes a flow that re-opens the window. The peer plays such a sender: after the 4th frame it sends nothing more
 * until the flow it is waiting for arrives.
 *
 * <p>protonj2 re-opens the window by itself in only two ways: a delivery read while the window is exactly 0
 * (it then writes a flow naming <em>that delivery's</em> link), and any link flow (a credit grant or a drain).
 * The runtime writes link flows on its own when deliveries complete and a grant is due, and when a link has been
 * idle with credit outstanding for {@code creditCheckInterval} (the idle drain).
 */
@Timeout(60)
class WireSessionWindowTest {

    /** Session incoming capacity of 4 frames of 64 KiB: protonj2 advertises incoming-window 4. */
    private static final int WINDOW = 4;
    private static final int A = 0;
    private static final int B = 1;

    enum LastFrame {
        /** The final frame (more=false) of a multi-frame delivery carries no payload. */
        EMPTY_FINAL_TRANSFER,
        /** A delivery whose only frame is aborted=true with no payload. */
        PAYLOADLESS_ABORT
    }

    /**
     * protonj2's trap. Frame 1 is B's message (its handler blocks); frames 2..3 stream A's message; frame 4
     * is payload-less: the empty final frame of A's message, or a payload-less aborted delivery. It takes the
     * client's window to 0 without any bytes being read, so protonj2 writes no flow, and A's completed delivery does
     * not make a grant due (1 free slot, batch 2). The session is stalled for both links: without a link flow the
     * peer would never send A's two remaining messages (nor anything for B). What clears it: after 300 ms of
     * idleness with credit outstanding the runtime drains A; that flow carries incoming-window 4 at
     * next-incoming-id = first + 4, which re-opens the session. The peer then sends A's remaining messages and
     * answers the drain; A handles them, B is released and finishes, and both links close cleanly.
     */
    @ParameterizedTest
    @EnumSource(LastFrame.class)
    void payloadlessFrameThatClosesTheSessionWindowIsReopenedByTheIdleDrain(LastFrame last) throws Exception {
        List<String> handledA = new CopyOnWriteArrayList<>();
        List<String> handledB = new CopyOnWriteArrayList<>();
        CountDownLatch releaseB = new CountDownLatch(1);
        AtomicLong firstIncomingId = new AtomicLong(-1);
        AtomicLong reopenedIncomingId = new AtomicLong(-1);
        String bigBody = "x".repeat(100);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            peer.expectSASLAnonymousConnect();
            peer.expectOpen().respond();
            peer.expectBegin().withIncomingWindow(WINDOW).respond();
            peer.expectAttach().ofReceiver().withHandle(A).respond();
            peer.expectFlow().withHandle(A).withLinkCredit(8).withIncomingWindow(WINDOW)
                    .withCapture(f -> firstIncomingId.set(f.getNextIncomingId().longValue()));
            peer.expectAttach().ofReceiver().withHandle(B).respond();
            peer.expectFlow().withHandle(B).withLinkCredit(1).withIncomingWindow(WINDOW);
            // frame 1: B's message (delivery 0)
            transfer(peer, B, 0, encoded("b-1", "b-1"));
            // frames 2..3: A's big message (delivery 1) in 2 frames with payload
            byte[] big = encoded("a-1", bigBody);
            int chunks = WINDOW - 2;
            for (int i = 0; i < chunks; i++) {
                int from = (int) ((long) big.length * i / chunks);
                int to = (int) ((long) big.length * (i + 1) / chunks);
                boolean more = last == LastFrame.EMPTY_FINAL_TRANSFER || i < chunks - 1;
                var frame = peer.remoteTransfer().withHandle(A).withMore(more)
                        .withPayload(Arrays.copyOfRange(big, from, to));
                if (i == 0) {
                    frame.withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMessageFormat(0);
                }
                frame.queue();
            }
            // frame 4: payload-less, closes the window
            int nextId;
            if (last == LastFrame.EMPTY_FINAL_TRANSFER) {
                peer.remoteTransfer().withHandle(A).withMore(false).queue();
                nextId = 2;
            } else {
                peer.remoteTransfer().withHandle(A).withDeliveryId(2).withDeliveryTag(new byte[] {2})
                        .withMore(false).withAborted(true).withMessageFormat(0).queue();
                nextId = 3;
            }
            // A's message is handled and accepted; 1 slot free is below the batch of 2: no grant, no flow.
            peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
            // The stall: nothing but the idle drain of A can come now. It re-opens the window.
            int creditLeft = last == LastFrame.EMPTY_FINAL_TRANSFER ? 7 : 6;
            int countNow = 8 - creditLeft;
            peer.expectFlow().withHandle(A).withDrain(true).withLinkCredit(creditLeft).withDeliveryCount(countNow)
                    .withIncomingWindow(WINDOW)
                    .withCapture(f -> reopenedIncomingId.set(f.getNextIncomingId().longValue()));
            // ... which the peer answers like a broker: A's two remaining messages, then the drained flow.
            transfer(peer, A, nextId, encoded("a-2", "a-2"));
            transfer(peer, A, nextId + 1, encoded("a-3", "a-3"));
            peer.remoteFlow().withHandle(A).withDrain(true).withLinkCredit(0).withDeliveryCount(8).queue();
            // From here the order is free: a handler thread may take a-2 while the drain is still out, so the
            // re-count, the grants and the two dispositions interleave in more than one valid way.
            WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            try (AmqpConsumer consumer = consumer(peer, Duration.ofMillis(300), handledA, handledB, releaseB, 0)) {
                awaitRescued(consumer, tail, nextId, handledA, bigBody);
                releaseB.countDown();
                await().atMost(Duration.ofSeconds(10)).until(() -> tail.outcome(0, 0) != null);
                assertThat(tail.outcome(0, 0)).isEqualTo("accepted");
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
        assertThat(handledB).containsExactly("b-1");
        assertThat(reopenedIncomingId.get() - firstIncomingId.get()).as("frames received before the re-opening flow")
                .isEqualTo(WINDOW);
    }

    /**
     * QPID-8751. Frame 1 is B's first message (its handler blocks), frames 2..3 stream A's message, frame 4 is
     * B's second message, with payload: protonj2 reads it with the window at 0 and re-opens the window with a flow
     * naming only B (handle 1, link-credit 0). A Broker-J with the bug re-evaluates only B, which has no credit, so
     * it sends nothing: A keeps 7 credits on an attached link and is never served, although the session may send
     * again. The peer plays that broker: it serves A only once a flow naming A arrives. A's completed message did
     * not make a grant due, so the only flow naming A is the runtime's idle drain (after 300 ms); the peer answers it
     * with A's remaining messages. Without the idle drain (creditCheckInterval of minutes) A would stay stranded
     * for the life of the connection, exactly as in the report.
     */
    @Test
    void windowReopenedByAFlowNamingOnlyOneLinkLeavesTheOtherToItsIdleDrain() throws Exception {
        List<String> handledA = new CopyOnWriteArrayList<>();
        List<String> handledB = new CopyOnWriteArrayList<>();
        CountDownLatch releaseB = new CountDownLatch(1);
        String bigBody = "y".repeat(100);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            peer.expectSASLAnonymousConnect();
            peer.expectOpen().respond();
            peer.expectBegin().withIncomingWindow(WINDOW).respond();
            peer.expectAttach().ofReceiver().withHandle(A).respond();
            peer.expectFlow().withHandle(A).withLinkCredit(8).withIncomingWindow(WINDOW);
            peer.expectAttach().ofReceiver().withHandle(B).respond();
            peer.expectFlow().withHandle(B).withLinkCredit(2).withIncomingWindow(WINDOW);
            transfer(peer, B, 0, encoded("b-1", "b-1"));
            byte[] big = encoded("a-1", bigBody);
            int chunks = WINDOW - 2;
            for (int i = 0; i < chunks; i++) {
                int from = (int) ((long) big.length * i / chunks);
                int to = (int) ((long) big.length * (i + 1) / chunks);
                var frame = peer.remoteTransfer().withHandle(A).withMore(i < chunks - 1)
                        .withPayload(Arrays.copyOfRange(big, from, to));
                if (i == 0) {
                    frame.withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMessageFormat(0);
                }
                frame.queue();
            }
            transfer(peer, B, 2, encoded("b-2", "b-2"));
            // protonj2 re-opens the window with a flow naming B only (the one whose delivery was read at 0).
            peer.expectFlow().withHandle(B).withLinkCredit(0).withDeliveryCount(2).withIncomingWindow(WINDOW);
            peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
            // Broker-J does not re-evaluate A. Only a flow naming A gets it served: the idle drain.
            peer.expectFlow().withHandle(A).withDrain(true).withLinkCredit(7).withDeliveryCount(1)
                    .withIncomingWindow(WINDOW);
            transfer(peer, A, 3, encoded("a-2", "a-2"));
            transfer(peer, A, 4, encoded("a-3", "a-3"));
            peer.remoteFlow().withHandle(A).withDrain(true).withLinkCredit(0).withDeliveryCount(8).queue();
            WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            try (AmqpConsumer consumer = consumer(peer, Duration.ofMillis(300), handledA, handledB, releaseB, 1)) {
                awaitRescued(consumer, tail, 3, handledA, bigBody);
                releaseB.countDown();
                await().atMost(Duration.ofSeconds(10)).until(() -> tail.outcome(0, 2) != null);
                assertThat(tail.outcome(0, 0)).isEqualTo("accepted");
                assertThat(tail.outcome(0, 2)).isEqualTo("accepted");
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
        assertThat(handledB).containsExactly("b-1", "b-2");
    }

    private static AmqpConsumer consumer(ProtonTestServer peer, Duration creditCheckInterval, List<String> handledA,
                                         List<String> handledB, CountDownLatch releaseB, int prefetchB) {
        return AmqpConsumer.builder()
                .connection(ScriptedPeer.settings(peer).build())
                .store(InMemoryIdempotencyStore.ofDefaults())
                .creditCheckInterval(creditCheckInterval)
                .sessionIncomingCapacity(WINDOW * 65536)
                .subscribe(Subscription.builder("queue-a", e -> handledA.add(e.body(String.class)))
                        .name("a").sessionGroup("g").concurrency(1).prefetch(7).build())
                .subscribe(Subscription.builder("queue-b", e -> {
                    releaseB.await();
                    handledB.add(e.body(String.class));
                }).name("b").sessionGroup("g").concurrency(1).prefetch(prefetchB).build())
                .start();
    }

    /**
     * A rescued: its two remaining messages (delivery ids {@code firstId} and {@code firstId + 1}) handled in order
     * and accepted, and its whole budget of 8 granted to the broker again (a flow with link-credit 8).
     */
    private static void awaitRescued(AmqpConsumer consumer, WireLog tail, int firstId, List<String> handledA,
                                     String bigBody) {
        await("A rescued").atMost(Duration.ofSeconds(20)).until(() -> handledA.size() == 3
                && "accepted".equals(tail.outcome(0, firstId)) && "accepted".equals(tail.outcome(0, firstId + 1))
                && consumer.health().subscriptions().get(A).credit() == 8
                && tail.grants(A).stream().anyMatch(f -> f.credit() == 8)); // the peer saw the budget restored
        assertThat(handledA).containsExactly(bigBody, "a-2", "a-3");
    }

    private static void transfer(ProtonTestServer peer, int handle, int deliveryId, byte[] payload) {
        peer.remoteTransfer().withHandle(handle).withDeliveryId(deliveryId)
                .withDeliveryTag(new byte[] {(byte) deliveryId}).withMore(false).withMessageFormat(0)
                .withPayload(payload).queue();
    }
}

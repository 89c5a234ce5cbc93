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
 * its handler held on a latch).
 *
 * <p>protonj2 advertises incoming-window = session incoming capacity / max-frame-size = 100 MiB / 64 KiB =
 * {@value #WINDOW} frames. After that many frames a compliant sender must stop sending on the whole session, for every
 * link, until the client writes a flow that re-opens the window. The peer plays such a sender: frame
 * {@value #WINDOW} is the last before it waits for that flow. protonj2 re-opens the window by itself in two ways only:
 * a delivery read while the window is exactly 0 (then it writes a flow naming that delivery's link), and any link
 * flow. The runtime's engine hooks repair the rest on the event, with no timer: when a frame leaves the window closed,
 * and when protonj2 re-opened it for one link only, they write a flow for every link of the session that has credit.
 */
@Timeout(60)
class WireSessionWindowTest {

    /** protonj2's default session window: 100 MiB capacity / 64 KiB frames. */
    private static final int WINDOW = 1600;
    private static final int A = 0;
    private static final int B = 1;

    enum LastFrame {
        /** The final frame (more=false) of a multi-frame delivery carries no payload. */
        EMPTY_FINAL_TRANSFER,
        /** A delivery whose only frame is aborted=true with no payload. */
        PAYLOADLESS_ABORT
    }

    /**
     * protonj2's trap. Frame 1 is B's message (its handler blocks); frames 2..1599 stream A's message; frame 1600 is
     * payload-less: the empty final frame of A's message, or a payload-less aborted delivery. It takes the client's
     * window to 0 without any bytes being read, so protonj2 writes no flow, and A's completed delivery does not make a
     * grant due (1 free slot, batch 2): the session would be stalled for both links. The runtime writes a flow naming
     * A (its remaining credit, incoming-window {@value #WINDOW}, next-incoming-id = first + {@value #WINDOW}) at once,
     * before A's first message is even settled; the peer then sends A's remaining messages.
     */
    @ParameterizedTest
    @EnumSource(LastFrame.class)
    void payloadlessFrameThatClosesTheSessionWindowIsAnsweredByAFlowForTheLinkWithCredit(LastFrame last)
            throws Exception {
        List<String> handledA = new CopyOnWriteArrayList<>();
        List<String> handledB = new CopyOnWriteArrayList<>();
        CountDownLatch releaseB = new CountDownLatch(1);
        AtomicLong firstIncomingId = new AtomicLong(-1);
        AtomicLong reopenedIncomingId = new AtomicLong(-1);
        String bigBody = "x".repeat(4 * WINDOW);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStart(peer, 0, firstIncomingId);
            transfer(peer, B, 0, encoded("b-1", "b-1"));
            int nextId = streamA(peer, bigBody, last == LastFrame.EMPTY_FINAL_TRANSFER);
            if (last == LastFrame.EMPTY_FINAL_TRANSFER) {
                peer.remoteTransfer().withHandle(A).withMore(false).queue();
            } else {
                peer.remoteTransfer().withHandle(A).withDeliveryId(2).withDeliveryTag(new byte[] {2})
                        .withMore(false).withAborted(true).withMessageFormat(0).queue();
                nextId = 3;
            }
            WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            int creditLeft = last == LastFrame.EMPTY_FINAL_TRANSFER ? 7 : 6;
            try (AmqpConsumer consumer = consumer(peer, handledA, handledB, releaseB, 0)) {
                // The window is closed with A's credit outstanding: the runtime's flow for A comes at once. The peer
                // sends nothing more until it sees it.
                await().until(() -> !tail.flows(A).isEmpty());
                WireLog.FlowFrame reopening = tail.flows(A).get(0);
                assertThat(reopening.drain()).isFalse();
                assertThat(reopening.credit()).isEqualTo(creditLeft);
                assertThat(reopening.incomingWindow()).isEqualTo(WINDOW);
                reopenedIncomingId.set(reopening.nextIncomingId());
                WireLog.transfer(peer, 0, A, nextId, encoded("a-2", "a-2"));
                WireLog.transfer(peer, 0, A, nextId + 1, encoded("a-3", "a-3"));
                awaitRescued(tail, nextId, handledA, bigBody);
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
     * QPID-8751. Frame 1 is B's first message (its handler blocks), frames 2..1599 stream A's message, frame 1600 is
     * B's second message, with payload: protonj2 reads it with the window at 0 and re-opens the window with a flow
     * naming only B (link-credit 0). A Broker-J with the bug re-evaluates only B, which has no credit, so it sends
     * nothing: A keeps 7 credits on an attached link and is never served. The peer plays that broker: it serves A
     * only once a flow naming A arrives. The runtime writes it right after protonj2's flow for B.
     */
    @Test
    void windowReopenedByAFlowNamingOnlyOneLinkIsFollowedByAFlowForEveryOtherLinkWithCredit() throws Exception {
        List<String> handledA = new CopyOnWriteArrayList<>();
        List<String> handledB = new CopyOnWriteArrayList<>();
        CountDownLatch releaseB = new CountDownLatch(1);
        String bigBody = "y".repeat(4 * WINDOW);
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectStart(peer, 1, new AtomicLong());
            transfer(peer, B, 0, encoded("b-1", "b-1"));
            streamA(peer, bigBody, false);
            transfer(peer, B, 2, encoded("b-2", "b-2"));
            WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
            peer.start();

            try (AmqpConsumer consumer = consumer(peer, handledA, handledB, releaseB, 1)) {
                // protonj2 re-opens the window with a flow naming B only (the one whose delivery was read at 0), and
                // the runtime follows with one naming A, the other link with credit. The peer serves A only then.
                await().until(() -> !tail.flows(A).isEmpty());
                WireLog.FlowFrame forB = tail.flows(B).get(0);
                WireLog.FlowFrame forA = tail.flows(A).get(0);
                assertThat(tail.flows.indexOf(forB)).as("protonj2's flow for B first").isLessThan(
                        tail.flows.indexOf(forA));
                assertThat(forB.credit()).isZero();
                assertThat(forB.deliveryCount()).isEqualTo(2);
                assertThat(forA.drain()).isFalse();
                assertThat(forA.credit()).isEqualTo(7);
                assertThat(forA.deliveryCount()).isEqualTo(1);
                assertThat(forA.incomingWindow()).isEqualTo(WINDOW);
                WireLog.transfer(peer, 0, A, 3, encoded("a-2", "a-2"));
                WireLog.transfer(peer, 0, A, 4, encoded("a-3", "a-3"));
                awaitRescued(tail, 3, handledA, bigBody);
                releaseB.countDown();
                await().atMost(Duration.ofSeconds(10)).until(() -> tail.outcome(0, 2) != null);
                assertThat(tail.outcome(0, 0)).isEqualTo("accepted");
                assertThat(tail.outcome(0, 2)).isEqualTo("accepted");
            }
            peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
        }
        assertThat(handledB).containsExactly("b-1", "b-2");
    }

    /**
     * The protection removed (engine hooks off, fallback check once a minute): after the empty final frame nothing
     * names A for a whole second, so a compliant broker would never send A's remaining messages.
     */
    @Test
    void withoutTheEngineHooksAPayloadlessFinalFrameLeavesTheSessionStalled() throws Exception {
        EngineHooksOff.run(() -> {
            CountDownLatch releaseB = new CountDownLatch(1);
            try (ProtonTestServer peer = new ProtonTestServer()) {
                expectStart(peer, 0, new AtomicLong());
                transfer(peer, B, 0, encoded("b-1", "b-1"));
                streamA(peer, "z".repeat(4 * WINDOW), true);
                peer.remoteTransfer().withHandle(A).withMore(false).queue();
                WireLog tail = WireLog.acceptAnythingThenClose(peer, 200, 2, 1);
                peer.start();
                try (AmqpConsumer consumer = consumer(peer, new CopyOnWriteArrayList<>(),
                        new CopyOnWriteArrayList<>(), releaseB, 0)) {
                    await().until(() -> "accepted".equals(tail.outcome(0, 1))
                            && consumer.health().subscriptions().get(A).inFlight() == 0
                            && consumer.health().subscriptions().get(A).credit() == 7);
                    await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(3))
                            .until(() -> tail.flows(A).isEmpty());
                    releaseB.countDown();
                }
                peer.waitForScriptToComplete(10, TimeUnit.SECONDS);
            }
        });
    }

    /** Connect, begin (window asserted), attach A and B and their first grants. */
    private static void expectStart(ProtonTestServer peer, int prefetchB, AtomicLong firstIncomingId) {
        peer.expectSASLAnonymousConnect();
        peer.expectOpen().respond();
        peer.expectBegin().withIncomingWindow(WINDOW).respond();
        peer.expectAttach().ofReceiver().withHandle(A).respond();
        peer.expectFlow().withHandle(A).withLinkCredit(8).withIncomingWindow(WINDOW)
                .withCapture(f -> firstIncomingId.set(f.getNextIncomingId().longValue()));
        peer.expectAttach().ofReceiver().withHandle(B).respond();
        peer.expectFlow().withHandle(B).withLinkCredit(1 + prefetchB).withIncomingWindow(WINDOW);
    }

    /**
     * Queues A's big message (delivery 1) as frames 2..{@value #WINDOW}-1, each with payload.
     *
     * @param more whether the last of these frames says more=true (an empty final frame follows)
     * @return the next delivery id
     */
    private static int streamA(ProtonTestServer peer, String body, boolean more) {
        byte[] big = encoded("a-1", body);
        int chunks = WINDOW - 2;
        for (int i = 0; i < chunks; i++) {
            int from = (int) ((long) big.length * i / chunks);
            int to = (int) ((long) big.length * (i + 1) / chunks);
            var frame = peer.remoteTransfer().withHandle(A).withMore(more || i < chunks - 1)
                    .withPayload(Arrays.copyOfRange(big, from, to));
            if (i == 0) {
                frame.withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMessageFormat(0);
            }
            frame.queue();
        }
        return 2;
    }

    private static AmqpConsumer consumer(ProtonTestServer peer, List<String> handledA, List<String> handledB,
                                         CountDownLatch releaseB, int prefetchB) {
        return ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder("queue-a", e -> handledA.add(e.body(String.class)))
                        .name("a").sessionGroup("g").concurrency(1).prefetch(7).build())
                .subscribe(Subscription.builder("queue-b", e -> {
                    releaseB.await();
                    handledB.add(e.body(String.class));
                }).name("b").sessionGroup("g").concurrency(1).prefetch(prefetchB).build())
                .start();
    }

    /** A rescued: its two remaining messages handled in order and accepted. */
    private static void awaitRescued(WireLog tail, int firstId, List<String> handledA, String bigBody) {
        await("A rescued").atMost(Duration.ofSeconds(20)).until(() -> handledA.size() == 3
                && "accepted".equals(tail.outcome(0, firstId)) && "accepted".equals(tail.outcome(0, firstId + 1)));
        assertThat(handledA).containsExactly(bigBody, "a-2", "a-3");
    }

    private static void transfer(ProtonTestServer peer, int handle, int deliveryId, byte[] payload) {
        peer.remoteTransfer().withHandle(handle).withDeliveryId(deliveryId)
                .withDeliveryTag(new byte[] {(byte) deliveryId}).withMore(false).withMessageFormat(0)
                .withPayload(payload).queue();
    }
}

package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.apache.qpid.protonj2.test.driver.codec.messaging.Released;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A link the broker detaches (queue deleted, forced detach) is never re-attached by protonj2 (client notes §5,
 * pitfall 6); the runtime must do it, with backoff, and must not settle deliveries of the dead link on the new one.
 */
@Timeout(30)
class WireLinkRecoveryTest {

    private static final int BUDGET = 20;
    private static final String[] OUTCOMES = {"amqp:accepted:list", "amqp:rejected:list", "amqp:released:list",
            "amqp:modified:list"};

    /**
     * Proves that after a remote detach (closed with amqp:resource-deleted, or a plain detach with the transient
     * amqp:link:detach-forced) the runtime re-attaches the same address and link
     * name with backoff (first try after >= 100 ms; refused with a transient condition; next try >= 200 ms later),
     * each attach again carrying the deliberately chosen source default-outcome released and the full outcome list
     * (a fresh ReceiverOptions each time: protonj2's copies would drop both), with credit budget minus the handler
     * still running; that the delivery whose handler was running when the link died is neither settled on the new
     * link nor counted ACCEPTED (abandoned), while its work is confirmed; and that its redelivery on the new link is
     * absorbed as DUPLICATE without running the handler again.
     */
    @ParameterizedTest(name = "closed={0} {1}")
    @CsvSource({"true, amqp:resource-deleted", "false, amqp:link:detach-forced"})
    void remotelyDetachedLinkIsReattachedWithBackoffAndTheInFlightDeliveryIsAbandonedThenAbsorbed(
            boolean closed, String condition) throws Exception {
        List<String> handled = new CopyOnWriteArrayList<>();
        RecordingObserver observer = new RecordingObserver();
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        CountDownLatch handlerEntered = new CountDownLatch(1);
        CountDownLatch releaseHandler = new CountDownLatch(1);
        AtomicLong refusedAttachAt = new AtomicLong();
        AtomicLong acceptedAttachAt = new AtomicLong();
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().withName("orders-link").respond();
            peer.expectFlow().withLinkCredit(BUDGET);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("ord-1", "one")).queue();
            peer.start();

            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store)
                    .observer(observer)
                    .subscribe(Subscription.builder("orders", e -> {
                        handled.add(e.body(String.class));
                        handlerEntered.countDown();
                        releaseHandler.await();
                    }).linkName("orders-link").concurrency(1).prefetch(BUDGET - 1).build())
                    .start()) {
                assertThat(handlerEntered.await(5, TimeUnit.SECONDS)).isTrue();
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);

                // The client answers the broker's detach; then the runtime re-attaches: refused once, then accepted.
                peer.expectDetach();
                peer.expectAttach().ofReceiver().withName("orders-link")
                        .withSource().withAddress("orders").withDefaultOutcome(new Released())
                        .withOutcomes(OUTCOMES).and()
                        .withCapture(a -> refusedAttachAt.set(System.nanoTime()))
                        .reject(true, "amqp:resource-limit-exceeded", "try again later");
                peer.expectDetach();
                peer.expectAttach().ofReceiver().withName("orders-link").withSenderSettleModeUnsettled()
                        .withSource().withAddress("orders").withDefaultOutcome(new Released())
                        .withOutcomes(OUTCOMES).and()
                        .withCapture(a -> acceptedAttachAt.set(System.nanoTime()))
                        .respond();
                peer.expectFlow().withLinkCredit(BUDGET - 1).withDeliveryCount(0);
                long detachedAt = System.nanoTime();
                peer.remoteDetach().withClosed(closed).withErrorCondition(condition, "link detached by the broker")
                        .now();
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                assertThat(TimeUnit.NANOSECONDS.toMillis(refusedAttachAt.get() - detachedAt))
                        .isGreaterThanOrEqualTo(90);
                assertThat(TimeUnit.NANOSECONDS.toMillis(acceptedAttachAt.get() - refusedAttachAt.get()))
                        .isGreaterThanOrEqualTo(180);

                releaseHandler.countDown();
                await().until(() -> observer.abandonments() == 1);
                assertThat(observer.settlements()).isEmpty();
                assertThat(store.isConfirmed("orders|s:ord-1")).isTrue();

                // The broker redelivers on the new link: absorbed, handler not run again.
                peer.expectDisposition().withFirst(1).withSettled(true).withState().accepted();
                peer.remoteTransfer().withDeliveryId(1).withDeliveryTag(new byte[] {1}).withMore(false)
                        .withMessageFormat(0).withPayload(encoded("ord-1", "one")).now();
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settlements().size() == 1);
                assertThat(observer.settlements())
                    .extracting(Settlement::subscription, Settlement::outcome, Settlement::reason)
                    .containsExactly(
                        tuple("orders", Outcome.ACCEPTED, SettleReason.DUPLICATE));
                assertThat(handled).containsExactly("one");
                assertThat(observer.abandonments()).isEqualTo(1);
                assertThat(observer.scopes()).as("the abandoned delivery's scope did not close as ACCEPTED")
                        .extracting(RecordingObserver.Scope::outcome).containsExactly((Outcome) null);
                assertThat(consumer.health().subscriptions().get(0).attached()).isTrue();

                ScriptedPeer.expectGracefulClose(peer, 1, BUDGET - 2);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }
}

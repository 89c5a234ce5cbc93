package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.hamcrest.Matchers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The outcome a conflicting copy gets on the wire: the store holds its key (confirmed, with another fingerprint) and
 * it arrives with different content. By default it is accepted (settled as a copy), with {@code onConflict(REJECT)}
 * it is rejected with {@value RejectionConditions#FINGERPRINT_CONFLICT}; the handler never runs.
 */
@Timeout(30)
class WireFingerprintConflictTest {

    /** A fingerprint no body hashes to in these tests. */
    private static final String OTHER_FINGERPRINT = "0123456789abcdef0123456789abcdef";

    final List<String> handled = new CopyOnWriteArrayList<>();
    final ScopeObserver observer = new ScopeObserver();
    final InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();

    /** The store already holds {@code orders|s:order-1}, confirmed by a claim with {@link #OTHER_FINGERPRINT}. */
    void confirmedWithOtherContent() {
        Claim claim = store.acquire("orders|s:order-1", OTHER_FINGERPRINT);
        assertThat(claim.claimed()).isTrue();
        assertThat(store.confirm(claim)).isTrue();
    }

    void run(Fingerprint fingerprint, java.util.function.Consumer<ProtonTestServer> expectation) throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            expectConnectAndBegin(peer);
            peer.expectAttach().ofReceiver().respond();
            peer.expectFlow().withLinkCredit(101);
            peer.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                    .withMessageFormat(0).withPayload(encoded("order-1", "order 1, changed")).queue();
            expectation.accept(peer);
            peer.start();
            try (AmqpConsumer consumer = ScriptedPeer.consumer(peer, store).observer(observer)
                    .subscribe(Subscription.builder("orders", e -> handled.add(e.id()))
                            .fingerprint(fingerprint).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.settled.size() == 1);
                ScriptedPeer.expectGracefulClose(peer, 1, 100);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void byDefaultAConflictingCopyIsAcceptedAsACopyAndReported() throws Exception {
        confirmedWithOtherContent();
        run(Fingerprint.body(), peer -> peer.expectDisposition().withSettled(true).withState().accepted());
        assertThat(handled).isEmpty();
        assertThat(observer.settled).singleElement().isEqualTo(new ScopeObserver.Settled("orders",
                "orders|s:order-1", Outcome.ACCEPTED, SettleReason.CONFLICT));
        assertThat(observer.conflicts).singleElement().satisfies(c -> {
            assertThat(c.recordedFingerprint()).isEqualTo(OTHER_FINGERPRINT);
            assertThat(c.fingerprint()).matches("[0-9a-f]{32}").isNotEqualTo(OTHER_FINGERPRINT);
        });
    }

    @Test
    void withRejectAConflictingCopyIsRejectedWithTheFingerprintConflictCondition() throws Exception {
        confirmedWithOtherContent();
        run(Fingerprint.body().onConflict(Fingerprint.Action.REJECT), peer -> peer.expectDisposition()
                .withSettled(true).withState().rejected(RejectionConditions.FINGERPRINT_CONFLICT,
                        Matchers.containsString("different fingerprint")));
        assertThat(handled).isEmpty();
        assertThat(observer.settled).singleElement().isEqualTo(new ScopeObserver.Settled("orders",
                "orders|s:order-1", Outcome.REJECTED, SettleReason.CONFLICT));
        assertThat(observer.conflicts).hasSize(1);
        assertThat(store.isConfirmed("orders|s:order-1")).as("the confirmed key stays confirmed").isTrue();
    }

    @Test
    void withTheCheckOffTheSameCopyIsAPlainDuplicate() throws Exception {
        confirmedWithOtherContent();
        run(Fingerprint.off(), peer -> peer.expectDisposition().withSettled(true).withState().accepted());
        assertThat(handled).isEmpty();
        assertThat(observer.settled).singleElement().isEqualTo(new ScopeObserver.Settled("orders",
                "orders|s:order-1", Outcome.ACCEPTED, SettleReason.DUPLICATE));
        assertThat(observer.conflicts).isEmpty();
    }
}

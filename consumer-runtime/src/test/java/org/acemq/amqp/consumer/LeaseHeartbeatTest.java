package org.acemq.amqp.consumer;

import static org.acemq.amqp.consumer.ScriptedPeer.encoded;
import static org.acemq.amqp.consumer.ScriptedPeer.expectConnectAndBegin;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.ManualTime;
import org.acemq.amqp.consumer.testing.RecordingObserver;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testkit.MutableClock;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Lease heartbeat and fencing, with moved time: the store runs on a {@link MutableClock}, and the consumer on a
 * {@link ManualTime} given through the public {@code ticker}/{@code scheduler} settings, so its heartbeats run only
 * when the test moves time. Nothing sleeps; a peer store over the same state plays a second consumer that tries to take
 * the message over. Renewals are counted from the observer's store calls.
 */
@Timeout(30)
class LeaseHeartbeatTest {

    static final Duration LEASE = Duration.ofSeconds(30);
    static final String KEY = "orders|s:long-1";

    MutableClock clock;
    InMemoryIdempotencyStore store;
    InMemoryIdempotencyStore peer;
    ManualTime time;
    RecordingObserver observer;
    CountDownLatch started;
    CountDownLatch finish;

    @BeforeEach
    void setUp() {
        clock = MutableClock.create();
        store = InMemoryIdempotencyStore.builder().lease(LEASE).clock(clock).build();
        peer = store.newPeer();
        time = new ManualTime();
        observer = new RecordingObserver();
        started = new CountDownLatch(1);
        finish = new CountDownLatch(1);
    }

    /** A handler that blocks until the test lets it go, then succeeds or throws. */
    MessageHandler blocking(boolean fail) {
        return envelope -> {
            started.countDown();
            finish.await();
            if (fail) {
                throw new IllegalStateException("downstream timed out");
            }
        };
    }

    /** One message "long-1" on the wire; {@code settle} scripts the disposition the test expects. */
    AmqpConsumer start(ProtonTestServer wire, MessageHandler handler, boolean renew) {
        return AmqpConsumer.builder()
                .connection(ScriptedPeer.settings(wire).build())
                .store(store)
                .observer(observer)
                .ticker(time)
                .scheduler(time)
                .subscribe(Subscription.builder("orders", handler).renewLeases(renew)
                        .retryBackoff(RetryBackoff.none()).build())
                .start();
    }

    static void scriptOneMessage(ProtonTestServer wire) {
        expectConnectAndBegin(wire);
        wire.expectAttach().ofReceiver().respond();
        wire.expectFlow().withLinkCredit(101);
        wire.remoteTransfer().withDeliveryId(0).withDeliveryTag(new byte[] {0}).withMore(false)
                .withMessageFormat(0).withPayload(encoded("long-1", "work")).queue();
    }

    void awaitHandlerStarted() throws InterruptedException {
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aHandlerRunningLongerThanItsLeaseKeepsItsClaimBecauseTheHeartbeatRenewsItAndRenewalStopsAtConfirm()
            throws Exception {
        try (ProtonTestServer wire = new ProtonTestServer()) {
            scriptOneMessage(wire);
            wire.expectDisposition().withSettled(true).withState().accepted();
            wire.start();
            try (AmqpConsumer consumer = start(wire, blocking(false), true)) {
                awaitHandlerStarted();
                time.advance(Duration.ofSeconds(10).minusMillis(200));
                assertThat(observer.renewals()).as("not before a third of the lease").isEqualTo(0);
                time.advance(Duration.ofMillis(200));
                assertThat(observer.renewals()).as("a third of the lease").isEqualTo(1);

                // more than two full leases pass while the handler runs; every 10 s a heartbeat renews the lease
                for (int i = 0; i < 3; i++) {
                    clock.advance(Duration.ofSeconds(20));
                    time.advance(Duration.ofSeconds(20));
                    assertThat(observer.renewals()).isEqualTo(1 + 2 * (i + 1));
                    clock.advance(Duration.ofSeconds(20)); // past the lease the first of these beats had set
                    assertThat(peer.acquire(KEY).withFingerprint(null)).as("after %d s the peer still finds it in progress", 40 * (i + 1))
                            .isEqualTo(new Claim(KEY, ClaimResult.IN_PROGRESS, 1));
                }
                assertThat(store.attempts(KEY)).as("never taken over").isEqualTo(1);

                finish.countDown();
                wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                int renewed = observer.renewals();
                time.advance(LEASE);
                assertThat(observer.renewals()).as("renewal stopped at the confirm").isEqualTo(renewed);
                clock.advance(LEASE.multipliedBy(2));
                assertThat(peer.acquire(KEY).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
                ScriptedPeer.expectGracefulClose(wire, 1, 100);
            }
            wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /**
     * Found by the soak: a handler that has returned holds its claim until the confirm is recorded, and a confirm that
     * waits (a busy store, retries) must not let the lease lapse meanwhile, or a copy arriving then runs the work
     * again. The heartbeat renews the claim until its confirm is recorded, then stops. (Before, renewal stopped when
     * the handler returned, and the peer below took the message over after 40 s.)
     */
    @Test
    void aClaimWhoseConfirmWaitsKeepsItsLeaseUntilTheConfirmIsRecorded() throws Exception {
        FaultInjectingStore slowConfirms = new FaultInjectingStore(store);
        slowConfirms.hold(StoreOperation.CONFIRM);
        try (ProtonTestServer wire = new ProtonTestServer()) {
            scriptOneMessage(wire);
            wire.expectDisposition().withSettled(true).withState().accepted();
            wire.start();
            try (AmqpConsumer consumer = AmqpConsumer.builder()
                    .connection(ScriptedPeer.settings(wire).build())
                    .store(slowConfirms)
                    .observer(observer)
                    .ticker(time)
                    .scheduler(time)
                    .subscribe(Subscription.builder("orders", blocking(false)).retryBackoff(RetryBackoff.none())
                            .build())
                    .start()) {
                awaitHandlerStarted();
                finish.countDown();
                await().until(() -> slowConfirms.waiting(StoreOperation.CONFIRM) == 1);
                int renewedWhileRunning = observer.renewals();

                // two leases pass while the confirm waits for a busy store: the heartbeat keeps the claim
                for (int i = 1; i <= 4; i++) {
                    clock.advance(Duration.ofSeconds(20));
                    time.advance(Duration.ofSeconds(20)); // the heartbeat's sweeps run on the way, on this thread
                    assertThat(peer.acquire(KEY).result()).as("after the confirm waited %d s", 20 * i)
                            .isEqualTo(ClaimResult.IN_PROGRESS);
                }
                assertThat(observer.renewals()).as("renewed while the confirm waited")
                        .isGreaterThan(renewedWhileRunning);
                assertThat(store.attempts(KEY)).as("never taken over").isEqualTo(1);

                slowConfirms.open(StoreOperation.CONFIRM);
                wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                int renewed = observer.renewals();
                time.advance(LEASE);
                assertThat(observer.renewals()).as("renewal stopped once the confirm was recorded").isEqualTo(renewed);
                ScriptedPeer.expectGracefulClose(wire, 1, 100);
            }
            wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void renewalStopsAtReleaseSoAnotherConsumerCanRetryTheMessageAtOnce() throws Exception {
        try (ProtonTestServer wire = new ProtonTestServer()) {
            scriptOneMessage(wire);
            wire.expectDisposition().withSettled(true).withState().modified(true);
            wire.start();
            try (AmqpConsumer consumer = start(wire, blocking(true), true)) {
                awaitHandlerStarted();
                clock.advance(Duration.ofSeconds(20));
                time.advance(Duration.ofSeconds(10));
                assertThat(observer.renewals()).isEqualTo(1);
                clock.advance(Duration.ofSeconds(20));
                assertThat(peer.acquire(KEY).result()).isEqualTo(ClaimResult.IN_PROGRESS);

                finish.countDown();
                wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.MODIFIED, SettleReason.FAILED) == 1);
                time.advance(LEASE);
                assertThat(observer.renewals()).as("renewal stopped at the release").isEqualTo(1);
                assertThat(peer.acquire(KEY).withFingerprint(null)).as("released: claimable at once, attempt 2")
                        .isEqualTo(new Claim(KEY, ClaimResult.CLAIMED, 2));
                ScriptedPeer.expectGracefulClose(wire, 1, 100);
            }
            wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void aHeartbeatThatComesTooLateFindsTheLeaseTakenOverAndStops() throws Exception {
        try (ProtonTestServer wire = new ProtonTestServer()) {
            scriptOneMessage(wire);
            wire.expectDisposition().withSettled(true).withState().accepted();
            wire.start();
            try (AmqpConsumer consumer = start(wire, blocking(false), true)) {
                awaitHandlerStarted();
                clock.advance(LEASE.plusSeconds(1)); // the whole process was paused: no beat in time
                Claim taken = peer.acquire(KEY);
                assertThat(taken).isEqualTo(new Claim(KEY, ClaimResult.CLAIMED, 2));
                time.advance(Duration.ofSeconds(10));
                assertThat(observer.renewals()).as("the late beat").isEqualTo(1);
                time.advance(LEASE);
                assertThat(observer.renewals()).as("a lost lease ends the renewal").isEqualTo(1);
                assertThat(peer.renew(taken)).as("the late beat did not disturb the new owner").isTrue();

                finish.countDown();
                wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);
                assertThat(store.isConfirmed(KEY)).isTrue();
                ScriptedPeer.expectGracefulClose(wire, 1, 100);
            }
            wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void aPausedHandlerWithoutRenewalConfirmsLateCompletionIsRecordedAndTheNewOwnersClaimBecomesADuplicate()
            throws Exception {
        try (ProtonTestServer wire = new ProtonTestServer()) {
            scriptOneMessage(wire);
            wire.expectDisposition().withSettled(true).withState().accepted();
            wire.start();
            try (AmqpConsumer consumer = start(wire, blocking(false), false)) {
                awaitHandlerStarted();
                time.advance(LEASE);
                assertThat(observer.renewals()).as("renewLeases(false): no heartbeat").isEqualTo(0);
                clock.advance(LEASE.plusSeconds(1));
                Claim taken = peer.acquire(KEY);
                assertThat(taken).as("the lease ran out: the peer takes over")
                        .isEqualTo(new Claim(KEY, ClaimResult.CLAIMED, 2));

                finish.countDown(); // the paused handler wakes up and succeeds: its confirm comes late
                wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 1);

                assertThat(store.isConfirmed(KEY)).as("the work did happen: completion is recorded").isTrue();
                assertThat(peer.renew(taken)).as("the new owner's lease is over").isFalse();
                assertThat(peer.release(taken)).as("its release does nothing").isFalse();
                assertThat(peer.confirm(taken)).as("its confirm is idempotent (not held)").isFalse();
                assertThat(store.newPeer().acquire(KEY).result()).as("every later copy is a duplicate")
                        .isEqualTo(ClaimResult.ALREADY_CONFIRMED);
                ScriptedPeer.expectGracefulClose(wire, 1, 100);
            }
            wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void aPausedHandlerWithoutRenewalThatFailsLateCannotReleaseTheNewOwnersClaim() throws Exception {
        try (ProtonTestServer wire = new ProtonTestServer()) {
            scriptOneMessage(wire);
            wire.expectDisposition().withSettled(true).withState().modified(true);
            wire.start();
            try (AmqpConsumer consumer = start(wire, blocking(true), false)) {
                awaitHandlerStarted();
                clock.advance(LEASE.plusSeconds(1));
                Claim taken = peer.acquire(KEY);
                assertThat(taken).isEqualTo(new Claim(KEY, ClaimResult.CLAIMED, 2));

                finish.countDown(); // the paused handler wakes up and fails: its release comes late
                wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
                await().until(() -> observer.count(Outcome.MODIFIED, SettleReason.FAILED) == 1);

                assertThat(peer.renew(taken)).as("the new owner still holds its lease").isTrue();
                assertThat(store.newPeer().acquire(KEY)).as("so a third consumer finds it in progress")
                        .isEqualTo(new Claim(KEY, ClaimResult.IN_PROGRESS, 2));
                assertThat(store.isConfirmed(KEY)).isFalse();
                assertThat(peer.confirm(taken)).as("and the new owner confirms normally").isTrue();
                ScriptedPeer.expectGracefulClose(wire, 1, 100);
            }
            wire.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }
}

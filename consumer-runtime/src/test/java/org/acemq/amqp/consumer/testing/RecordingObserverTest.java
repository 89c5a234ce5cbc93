package org.acemq.amqp.consumer.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.ConsumerObserver.HandlerScope;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.testing.RecordingObserver.Settlement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The observer's own rules, called the way the runtime calls an observer. */
@Timeout(30)
class RecordingObserverTest {

    private final RecordingObserver observed = new RecordingObserver();

    @Test
    void settlementsAreRecordedWithSubscriptionKeyOutcomeAndReasonAndCountedByThem() {
        observed.settled("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED);
        observed.settled("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.DUPLICATE);
        observed.settled("audit", "audit|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED);
        observed.settled("orders", null, Outcome.REJECTED, SettleReason.MISSING_ID);

        assertThat(observed.settlements()).containsExactly(
                new Settlement("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED),
                new Settlement("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.DUPLICATE),
                new Settlement("audit", "audit|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED),
                new Settlement("orders", null, Outcome.REJECTED, SettleReason.MISSING_ID));
        assertThat(observed.count(Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(2);
        assertThat(observed.count("orders", Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(1);
        assertThat(observed.keys(Outcome.ACCEPTED, SettleReason.PROCESSED)).containsExactly("orders|s:1", "audit|s:1");
        assertThat(observed.finished("orders")).isEqualTo(3);
        assertThat(observed.toString()).contains("ACCEPTED/PROCESSED=2");
    }

    @Test
    void eachDeliverysEndingIsRecordedInTheOrderReported() {
        observed.settled("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED);
        observed.dispositionDropped("orders");
        observed.abandoned("orders");

        assertThat(observed.endings()).containsExactly("ACCEPTED/PROCESSED", "dropped", "abandoned");
        assertThat(observed.dispositionsDropped()).isEqualTo(1);
        assertThat(observed.abandonments()).isEqualTo(1);
    }

    @Test
    void claimsConflictsStoreCallsAndStateChangesAreRecorded() {
        observed.claim("orders", ClaimResult.CLAIMED);
        observed.claim("orders", ClaimResult.IN_PROGRESS);
        observed.claimFailed("orders");
        observed.conflict("orders", "orders|s:1", "aa", "bb");
        observed.storeCall(StoreOperation.CLAIM, 5, true, 3);
        observed.storeCall(StoreOperation.RENEW, 1, true, 1);
        observed.storeCall(StoreOperation.RENEW, 1, false, 1);
        observed.storeBypassed("orders");
        observed.handled("orders", 7, false);
        observed.paused(true);
        observed.paused(false);
        observed.connectionInterrupted(true);
        observed.connectionInterrupted(false);

        assertThat(observed.claims()).containsExactly(ClaimResult.CLAIMED, ClaimResult.IN_PROGRESS);
        assertThat(observed.claimFailures()).isEqualTo(1);
        assertThat(observed.conflicts()).containsExactly(new RecordingObserver.Conflict("orders", "orders|s:1", "aa",
                "bb"));
        assertThat(observed.storeCalls()).first().isEqualTo(new RecordingObserver.StoreCall(StoreOperation.CLAIM, 5,
                true, 3));
        assertThat(observed.renewals()).isEqualTo(2);
        assertThat(observed.storeCalls(StoreOperation.CONFIRM)).isZero();
        assertThat(observed.bypassed()).isEqualTo(1);
        assertThat(observed.handled()).containsExactly(new RecordingObserver.Handled("orders", 7, false));
        assertThat(observed.pauses()).containsExactly(true, false);
        assertThat(observed.connectionChanges()).containsExactly(true, false);
        assertThat(observed.interruptions()).isEqualTo(1);
    }

    @Test
    void aHandlersScopeIsRecordedWithItsKeyOutcomeReasonAndFailure() {
        IllegalStateException boom = new IllegalStateException("boom");
        HandlerScope failed = observed.handlerStarting("orders", envelope("orders|s:1"), "test-broker");
        failed.failed(boom);
        failed.close(Outcome.MODIFIED, SettleReason.FAILED);
        observed.handlerStarting("orders", envelope("orders|s:2"), null).close(null, null);

        assertThat(observed.scopes()).containsExactly(
                new RecordingObserver.Scope("orders", "orders|s:1", Outcome.MODIFIED, SettleReason.FAILED, boom),
                new RecordingObserver.Scope("orders", "orders|s:2", null, null, null));
    }

    @Test
    void everyEventIsPassedOnToTheNextObserverAfterBeingRecorded() {
        RecordingObserver next = new RecordingObserver();
        RecordingObserver first = new RecordingObserver(next);

        first.settled("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED);
        first.claim("orders", ClaimResult.CLAIMED);
        first.conflict("orders", "orders|s:1", "aa", "bb");
        first.storeCall(StoreOperation.CONFIRM, 1, true, 2);
        first.abandoned("orders");
        first.paused(true);
        first.handlerStarting("orders", envelope("orders|s:1"), null).close(Outcome.ACCEPTED, SettleReason.PROCESSED);

        assertThat(next.settlements()).isEqualTo(first.settlements()).hasSize(1);
        assertThat(next.claims()).containsExactly(ClaimResult.CLAIMED);
        assertThat(next.conflicts()).hasSize(1);
        assertThat(next.storeCalls()).isEqualTo(first.storeCalls());
        assertThat(next.endings()).containsExactly("ACCEPTED/PROCESSED", "abandoned");
        assertThat(next.pauses()).containsExactly(true);
        assertThat(next.scopes()).isEqualTo(first.scopes()).hasSize(1);
    }

    @Test
    void anAccessorReturnsACopyThatLaterEventsDoNotChange() {
        observed.settled("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED);
        List<Settlement> before = observed.settlements();
        observed.settled("orders", "orders|s:2", Outcome.ACCEPTED, SettleReason.PROCESSED);
        assertThat(before).hasSize(1);
        assertThat(observed.settlements()).hasSize(2);
    }

    @Test
    void eventsFromManyThreadsAtOnceAreAllRecorded() throws Exception {
        int threads = 4;
        int each = 1_000;
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> runs = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                String subscription = "s" + t;
                runs.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < each; i++) {
                        observed.claim(subscription, ClaimResult.CLAIMED);
                        observed.settled(subscription, subscription + "|s:" + i, Outcome.ACCEPTED,
                                SettleReason.PROCESSED);
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> run : runs) {
                run.get(20, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(observed.settlements()).hasSize(threads * each);
        assertThat(observed.claims()).hasSize(threads * each);
        assertThat(observed.count("s2", Outcome.ACCEPTED, SettleReason.PROCESSED)).isEqualTo(each);
    }

    @Test
    void awaitReturnsOnceAnEventMakesTheConditionTrueAndFalseWhenTheTimeRunsOut() throws Exception {
        CompletableFuture<Boolean> waited = CompletableFuture.supplyAsync(() -> {
            try {
                return observed.await(o -> o.count(Outcome.ACCEPTED, SettleReason.PROCESSED) == 2,
                        Duration.ofSeconds(20));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        observed.settled("orders", "orders|s:1", Outcome.ACCEPTED, SettleReason.PROCESSED);
        assertThat(waited).isNotDone();
        observed.settled("orders", "orders|s:2", Outcome.ACCEPTED, SettleReason.PROCESSED);
        assertThat(waited.get(20, TimeUnit.SECONDS)).isTrue();

        assertThat(observed.await(o -> o.abandonments() > 0, Duration.ofMillis(50))).isFalse();
        assertThat(observed.await(o -> o.settlements().size() == 2, Duration.ZERO)).as("already true").isTrue();
    }

    @Test
    void withNoNextObserverNothingIsPassedOnAndAScopeIsStillReturned() {
        ConsumerObserver plain = new RecordingObserver();
        assertThat(plain.handlerStarting("orders", envelope("orders|s:1"), null)).isNotNull();
    }

    /** An envelope that answers its key and address and nothing else (an observer reads no more of it). */
    private static Envelope envelope(String key) {
        return (Envelope) Proxy.newProxyInstance(Envelope.class.getClassLoader(), new Class<?>[] {Envelope.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "id" -> key;
                    case "address" -> key.substring(0, key.indexOf('|'));
                    case "applicationProperties", "annotations" -> Map.of();
                    case "toString" -> "envelope " + key;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}

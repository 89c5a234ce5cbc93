package org.acemq.amqp.consumer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.net.ConnectException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The fault-injecting store's own rules, over the real in-memory store. */
@Timeout(30)
class FaultInjectingStoreTest {

    private final InMemoryIdempotencyStore memory = InMemoryIdempotencyStore.ofDefaults();
    private final FaultInjectingStore store = new FaultInjectingStore(memory);

    @Test
    void withNoFaultEveryCallReachesTheWrappedStoreAndIsRecorded() {
        Claim claim = store.acquire("k|1");
        assertThat(claim.claimed()).isTrue();
        assertThat(store.holdsClaim("k|1")).isTrue();
        assertThat(store.confirm(claim)).isTrue();
        assertThat(store.holdsClaim("k|1")).isFalse();
        assertThat(memory.isConfirmed("k|1")).isTrue();
        assertThat(store.acquire("k|1").result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);

        assertThat(store.calls(StoreOperation.CLAIM)).containsExactly(1, 1);
        assertThat(store.calls(StoreOperation.CONFIRM)).containsExactly(1);
        assertThat(store.claimed()).isEqualTo(1);
        assertThat(store.failures()).isZero();
        assertThat(store.store()).isSameAs(store);
        assertThat(store.leaseDuration()).isEqualTo(memory.leaseDuration());
    }

    @Test
    void aDownStoreFailsEveryCallAsAnOutageUntilItIsUpAgain() {
        Claim claim = store.acquire("k|1");
        store.down(true);

        for (Runnable call : List.<Runnable>of(() -> store.acquire("k|2"), () -> store.confirm(claim),
                () -> store.release(claim), () -> store.renew(claim), () -> store.isConfirmed("k|1"),
                () -> store.attempts("k|1"), () -> store.acquireAll(List.of("k|3", "k|4")))) {
            assertThatThrownBy(call::run).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("down").hasCauseInstanceOf(ConnectException.class);
        }
        assertThat(store.failures()).isEqualTo(6); // attempts is not an operation of its own
        assertThat(store.failures(StoreOperation.PROBE)).isEqualTo(1);
        assertThat(store.leaseDuration()).as("configuration still answers").isNotNull();
        assertThat(memory.attempts("k|2")).as("nothing reached the store").isZero();

        store.down(false);
        assertThat(store.confirm(claim)).isTrue();
        assertThat(store.isConfirmed("k|1")).isTrue();
    }

    @Test
    void failNextFailsThatManyCallsOfOneOperationOnlyAndABatchCountsAsOneCall() {
        store.failNext(StoreOperation.CONFIRM, 2);
        List<Claim> claims = store.acquireAll(List.of("k|1", "k|2"));

        assertThatThrownBy(() -> store.confirmAll(claims)).isInstanceOf(StoreUnavailableException.class);
        assertThatThrownBy(() -> store.confirm(claims.get(0))).isInstanceOf(StoreUnavailableException.class);
        assertThat(memory.isConfirmed("k|1")).as("a failed batch writes nothing").isFalse();
        assertThat(store.confirmAll(claims)).as("nothing lost").isEmpty();
        assertThat(memory.isConfirmed("k|1") && memory.isConfirmed("k|2")).isTrue();
        assertThat(store.failures(StoreOperation.CONFIRM)).isEqualTo(2);
        assertThat(store.failures(StoreOperation.CLAIM)).isZero();
        assertThat(store.calls(StoreOperation.CONFIRM)).containsExactly(2, 1, 2);
    }

    @Test
    void failWithThrowsTheGivenErrorUntilCleared() {
        NoClassDefFoundError error = new NoClassDefFoundError("test: missing");
        store.failWith(StoreOperation.CLAIM, error);
        assertThatThrownBy(() -> store.acquire("k|1")).isSameAs(error);
        assertThatThrownBy(() -> store.tryClaim("k|1")).isSameAs(error);

        store.failWith(StoreOperation.CLAIM, null);
        assertThat(store.acquire("k|1").claimed()).isTrue();
        assertThatThrownBy(() -> store.failWith(StoreOperation.CLAIM, new java.io.IOException("checked")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aRefusedKeyFailsItsClaimNamingItAndABatchHoldingItFailsWhole() {
        store.refuse("k|bad");
        assertThatThrownBy(() -> store.acquire("k|bad")).isInstanceOfSatisfying(InvalidMessageIdException.class,
                e -> assertThat(e.messageId()).isEqualTo("k|bad"));
        assertThatThrownBy(() -> store.acquireAll(List.of("k|1", "k|bad", "k|2")))
                .isInstanceOf(InvalidMessageIdException.class).hasMessageContaining("cannot hold this key");
        assertThat(memory.attempts("k|1")).as("nothing of the batch was claimed").isZero();
        assertThat(store.acquireAll(List.of("k|1", "k|2"))).allMatch(Claim::claimed);
    }

    @Test
    void aRefusalCanNameNoKeyAsAStoreThatCannotTellWhichKeyItRefused() {
        store.refuse("k|bad", false);
        assertThatThrownBy(() -> store.acquireAll(List.of("k|1", "k|bad"))).isInstanceOfSatisfying(
                InvalidMessageIdException.class, e -> assertThat(e.messageId()).isNull());
        assertThat(store.acquire("k|1").claimed()).as("other keys are claimed").isTrue();

        store.refuse("k|bad");
        assertThatThrownBy(() -> store.acquire("k|bad")).isInstanceOfSatisfying(InvalidMessageIdException.class,
                e -> assertThat(e.messageId()).as("named again").isEqualTo("k|bad"));
        store.refuse(null, false);
        assertThat(store.acquire("k|bad").claimed()).isTrue();
    }

    @Test
    void theHistoryHoldsEveryCallInOrderAndListenersAreToldAsEachArrives() throws Exception {
        List<String> log = new CopyOnWriteArrayList<>();
        store.onCall(call -> log.add("store: " + call));
        List<Claim> claims = store.acquireAll(List.of("k|1", "k|2"));
        log.add("test: between the calls");
        store.confirm(claims.get(0));
        store.releaseAll(claims.subList(1, 2));
        store.failNext(StoreOperation.PROBE, 1);
        assertThatThrownBy(() -> store.isConfirmed("k|1")).isInstanceOf(StoreUnavailableException.class);

        assertThat(store.history()).extracting(FaultInjectingStore.Call::operation).containsExactly(
                StoreOperation.CLAIM, StoreOperation.CONFIRM, StoreOperation.RELEASE, StoreOperation.PROBE);
        assertThat(store.history().get(0).keys()).containsExactly("k|1", "k|2");
        assertThat(log).as("failed calls are told too, in one order with the test's own events").containsExactly(
                "store: acquireAll [k|1, k|2]", "test: between the calls", "store: confirm [k|1]",
                "store: releaseAll [k|2]", "store: isConfirmed [k|1]");

        store.hold(StoreOperation.CONFIRM);
        CompletableFuture<Boolean> held = CompletableFuture.supplyAsync(() -> store.confirm(claims.get(0)));
        await().until(() -> store.waiting(StoreOperation.CONFIRM) == 1);
        assertThat(log).as("told before the call waits at its gate").endsWith("store: confirm [k|1]");
        store.open(StoreOperation.CONFIRM);
        assertThat(held.get(5, TimeUnit.SECONDS)).isNotNull();
    }

    @Test
    void aRefusedConfirmNamesTheKeyIsCountedAndLeavesItUnconfirmed() {
        Claim claim = store.acquire("k|1");
        store.refuseConfirmOf("k|1");
        assertThatThrownBy(() -> store.confirm(claim)).isInstanceOfSatisfying(InvalidMessageIdException.class,
                e -> assertThat(e.messageId()).isEqualTo("k|1"));
        assertThat(store.refusedConfirms()).isEqualTo(1);
        assertThat(memory.isConfirmed("k|1")).isFalse();
    }

    @Test
    void aHeldOperationWaitsAtItsGateUntilThereIsAPermitForEachOfItsKeys() throws Exception {
        store.hold(StoreOperation.CLAIM);
        CompletableFuture<List<Claim>> batch = CompletableFuture.supplyAsync(() -> store.acquireAll(
                List.of("k|1", "k|2")));
        await().until(() -> store.waiting(StoreOperation.CLAIM) == 1);
        assertThat(store.calls(StoreOperation.CLAIM)).as("recorded while it waits").containsExactly(2);

        store.allow(StoreOperation.CLAIM, 1);
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5))
                .until(() -> !batch.isDone() && store.waiting(StoreOperation.CLAIM) == 1);
        assertThat(store.isConfirmed("k|1")).as("other operations pass").isFalse();

        store.allow(StoreOperation.CLAIM, 1);
        assertThat(batch.get(5, TimeUnit.SECONDS)).hasSize(2).allMatch(Claim::claimed);
        assertThat(store.waiting(StoreOperation.CLAIM)).isZero();

        store.open(StoreOperation.CLAIM);
        store.open(StoreOperation.CLAIM); // twice is fine
        assertThat(store.acquire("k|3").claimed()).isTrue();
    }

    @Test
    void aDelayedOperationTakesAtLeastItsDelay() {
        Duration delay = Duration.ofMillis(100);
        store.delay(StoreOperation.PROBE, delay);
        long start = System.nanoTime();
        store.isConfirmed("k|1");
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(delay.toNanos());
        store.delay(StoreOperation.PROBE, Duration.ZERO);
    }

    @Test
    void aBatchIsPassedOnWholeToALeasedStore() {
        FaultInjectingStore outer = new FaultInjectingStore(store);
        List<Claim> claims = outer.acquireAll(List.of("k|1", "k|2", "k|3"), List.of("f1", "f2", "f3"));
        outer.confirmAll(claims.subList(0, 2));
        outer.releaseAll(claims.subList(2, 3));

        assertThat(outer.recordsFingerprints()).isEqualTo(memory.recordsFingerprints());
        assertThat(store.calls(StoreOperation.CLAIM)).as("one call for the three").containsExactly(3);
        assertThat(store.calls(StoreOperation.CONFIRM)).containsExactly(2);
        assertThat(store.calls(StoreOperation.RELEASE)).containsExactly(1);
        assertThat(store.holdsClaim("k|3")).isFalse();
    }

    @Test
    void thePlainViewOfALeasedStoreIsOnlyAPlainStoreAndGoesThroughTheSameFaults() {
        IdempotencyStore plain = store.plainStore();
        assertThat(plain).isNotInstanceOf(LeasedIdempotencyStore.class);
        assertThat(plain.claim("k|1")).isTrue();
        assertThat(store.holdsClaim("k|1")).isTrue();
        store.down(true);
        assertThatThrownBy(() -> plain.isConfirmed("k|1")).isInstanceOf(StoreUnavailableException.class);
        assertThat(store.failures(StoreOperation.PROBE)).isEqualTo(1);
        assertThat(store.calls(StoreOperation.CLAIM)).containsExactly(1);
    }

    @Test
    void aPlainStoreIsGivenToTheConsumerAsAPlainStoreWithTheSameFaults() {
        IdempotencyStore plain = new IdempotencyStore() { // only the plain SPI of the in-memory store
            @Override
            public boolean claim(String messageId) {
                return memory.claim(messageId);
            }

            @Override
            public void confirm(String messageId) {
                memory.confirm(messageId);
            }

            @Override
            public void release(String messageId) {
                memory.release(messageId);
            }

            @Override
            public boolean isConfirmed(String messageId) {
                return memory.isConfirmed(messageId);
            }
        };
        FaultInjectingStore faults = new FaultInjectingStore(plain);
        IdempotencyStore given = faults.store();

        assertThat(given).isNotInstanceOf(LeasedIdempotencyStore.class);
        assertThat(given.tryClaim("k|1")).isEqualTo(ClaimResult.CLAIMED);
        faults.down(true);
        assertThatThrownBy(() -> given.confirm("k|1")).isInstanceOf(StoreUnavailableException.class);
        faults.down(false);
        given.confirm("k|1");
        assertThat(given.tryClaim("k|1")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(faults.calls(StoreOperation.CLAIM)).containsExactly(1, 1);
        assertThat(faults.failures(StoreOperation.CONFIRM)).isEqualTo(1);
        assertThatThrownBy(() -> faults.acquire("k|2")).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("store()");
    }
}

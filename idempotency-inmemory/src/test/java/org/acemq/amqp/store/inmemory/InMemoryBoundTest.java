package org.acemq.amqp.store.inmemory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.testkit.MutableClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The optional bound: what is evicted, in which order, and what happens when nothing can be. */
class InMemoryBoundTest {

    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration RETENTION = Duration.ofSeconds(60);

    private final MutableClock clock = MutableClock.create();

    private InMemoryIdempotencyStore bounded(long maxEntries) {
        return InMemoryIdempotencyStore.builder()
                .lease(LEASE).retention(RETENTION).maxEntries(maxEntries).clock(clock).build();
    }

    @Test
    void fullOfLiveClaimsRefusesNewIdsWithStoreUnavailableAndWritesNothing() {
        InMemoryIdempotencyStore store = bounded(3);
        InMemoryIdempotencyStore peer = store.newPeer();
        store.acquire("a");
        store.acquire("b");
        peer.acquire("c");

        assertThatThrownBy(() -> store.acquire("d"))
                .isInstanceOf(StoreUnavailableException.class)
                .hasMessageStartingWith("in-memory store is full: ")
                .hasMessageContaining("maxEntries=3");
        assertThatThrownBy(() -> peer.tryClaim("d")).isInstanceOf(StoreUnavailableException.class);
        assertThatThrownBy(() -> peer.confirm("d")).isInstanceOf(StoreUnavailableException.class);
        assertThat(store.isConfirmed("d")).isFalse();
        assertThat(store.attempts("d")).isZero();
        assertThat(store.size()).isEqualTo(3);

        // the live claims are untouched, and existing ids still work
        assertThat(peer.tryClaim("a")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.tryClaim("c")).isEqualTo(ClaimResult.IN_PROGRESS);
        store.confirm("a");
        assertThat(store.acquire("d").claimed()).as("room made by evicting the confirmed id").isTrue();
        assertThat(store.isConfirmed("a")).isFalse();
        assertThat(peer.tryClaim("b")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(store.tryClaim("c")).isEqualTo(ClaimResult.IN_PROGRESS);
    }

    @Test
    void aFullStoreRefusesABatchBeforeItClaimsOrConfirmsAnything() {
        InMemoryIdempotencyStore store = bounded(3);
        InMemoryIdempotencyStore peer = store.newPeer();
        Claim a = store.acquire("a");
        store.acquire("b");
        peer.acquire("c");

        assertThatThrownBy(() -> store.acquireAll(List.of("d", "a", "e")))
                .isInstanceOf(StoreUnavailableException.class).hasMessageStartingWith("in-memory store is full: ");
        assertThatThrownBy(() -> store.confirmAll(List.of(a, new Claim("d", ClaimResult.CLAIMED, 1))))
                .isInstanceOf(StoreUnavailableException.class);
        assertThat(store.size()).as("nothing written").isEqualTo(3);
        assertThat(store.attempts("d")).isZero();
        assertThat(store.attempts("a")).isEqualTo(1);
        assertThat(peer.tryClaim("a")).as("a is not confirmed").isEqualTo(ClaimResult.IN_PROGRESS);

        Claim b = new Claim("b", ClaimResult.CLAIMED, 1);
        assertThat(store.confirmAll(List.of(a, b))).as("confirming what it holds needs no room").isEmpty();
        assertThat(store.acquireAll(List.of("d", "e"))).as("room made by evicting the confirmed ids")
                .extracting(Claim::result).containsExactly(ClaimResult.CLAIMED, ClaimResult.CLAIMED);
    }

    @Test
    void neverEvictsLiveClaims() {
        InMemoryIdempotencyStore store = bounded(10);
        InMemoryIdempotencyStore peer = store.newPeer();
        for (int i = 0; i < 5; i++) {
            store.acquire("live-" + i);
        }
        for (int i = 0; i < 1_000; i++) {
            peer.confirm(peer.acquire("done-" + i));
            clock.advance(Duration.ofMillis(1));
        }
        assertThat(store.size()).isLessThanOrEqualTo(10);
        for (int i = 0; i < 5; i++) {
            assertThat(peer.acquire("live-" + i).result()).isEqualTo(ClaimResult.IN_PROGRESS);
            assertThat(peer.attempts("live-" + i)).isEqualTo(1);
        }
        assertThat(peer.isConfirmed("done-999")).as("the newest confirmation survives").isTrue();
    }

    @Test
    void evictsTheOldestConfirmationFirst() {
        InMemoryIdempotencyStore store = bounded(4);
        for (int i = 1; i <= 4; i++) {
            store.confirm("c" + i);
            clock.advance(Duration.ofSeconds(1));
        }
        store.acquire("new");
        assertThat(store.isConfirmed("c1")).isFalse();
        assertThat(store.isConfirmed("c2")).isTrue();
        assertThat(store.isConfirmed("c3")).isTrue();
        assertThat(store.isConfirmed("c4")).isTrue();
    }

    @Test
    void keepsReleasedAttemptCountsWhileConfirmationsCanGo() {
        InMemoryIdempotencyStore store = bounded(4);
        Claim first = store.acquire("retried");
        store.release(first);
        store.confirm("c1");
        store.confirm("c2");
        store.confirm("c3");
        store.acquire("x");
        store.acquire("y");
        store.acquire("z");
        assertThat(store.attempts("retried")).isEqualTo(1);
        assertThat(store.acquire("retried").attempt()).isEqualTo(2);
    }

    @Test
    void evictsReleasedAndLapsedEntriesOnlyWhenNothingElseCanGo() {
        InMemoryIdempotencyStore store = bounded(2);
        store.release(store.acquire("released"));
        store.acquire("lapsed");
        clock.advance(LEASE);
        Claim live = store.acquire("live");
        assertThat(live.claimed()).isTrue();
        Claim another = store.acquire("another");
        assertThat(another.claimed()).isTrue();
        assertThat(store.size()).isEqualTo(2);
        assertThat(store.attempts("released") + store.attempts("lapsed")).isZero();
        assertThat(store.tryClaim("live")).isEqualTo(ClaimResult.IN_PROGRESS);
    }

    @Test
    void forgottenEntriesMakeRoomFirst() {
        InMemoryIdempotencyStore store = bounded(2);
        store.confirm("a");
        store.release(store.acquire("b"));
        clock.advance(RETENTION);
        assertThat(store.acquire("c").claimed()).isTrue();
        assertThat(store.acquire("d").claimed()).isTrue();
        assertThat(store.size()).isEqualTo(2);
    }

    @Test
    void anOccasionalSweepDropsForgottenEntriesWithoutReadingThem() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder()
                .lease(LEASE).retention(RETENTION).clock(clock).build();
        for (int i = 0; i < 100; i++) {
            store.confirm("old-" + i);
        }
        store.release(store.acquire("released"));
        store.acquire("lapsed");
        assertThat(store.size()).isEqualTo(102);
        clock.advance(RETENTION.plus(LEASE));
        store.acquire("trigger");
        assertThat(store.size()).as("only the new id is left").isEqualTo(1);
    }

    @Test
    void readsDropForgottenEntriesLazily() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder()
                .lease(LEASE).retention(RETENTION).clock(clock).build();
        store.confirm("a");
        clock.advance(RETENTION);
        assertThat(store.isConfirmed("a")).isFalse();
        assertThat(store.size()).isZero();
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void concurrentInsertsIntoAFullStoreKeepLiveClaimsAndStayNearTheBound() throws Exception {
        InMemoryIdempotencyStore store = bounded(1_000);
        for (int i = 0; i < 500; i++) {
            store.acquire("live-" + i);
        }
        int threads = 8;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                InMemoryIdempotencyStore mine = store.newPeer();
                int thread = t;
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < 20_000; i++) {
                        Claim claim = mine.acquire("t" + thread + "-" + i);
                        assertThat(claim.claimed()).isTrue();
                        mine.confirm(claim);
                    }
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                future.get(1, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(store.size()).as("soft bound: one batch of 1000 / 16 over at most")
                .isLessThanOrEqualTo(1_000 + 1_000 / 16 + threads);
        InMemoryIdempotencyStore observer = store.newPeer();
        for (int i = 0; i < 500; i++) {
            assertThat(observer.tryClaim("live-" + i)).isEqualTo(ClaimResult.IN_PROGRESS);
        }
    }
}

package org.acemq.amqp.store.inmemory;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.testkit.IdempotencyStoreContract;
import org.acemq.amqp.testkit.MutableClock;

/** The in-memory store against the full store contract, with time moved by a {@link MutableClock}. */
class InMemoryIdempotencyStoreTest extends IdempotencyStoreContract<InMemoryIdempotencyStore> {

    private MutableClock clock;

    @Override
    protected InMemoryIdempotencyStore createStore(Duration lease, Duration retention) {
        clock = MutableClock.create();
        return InMemoryIdempotencyStore.builder().lease(lease).retention(retention).clock(clock).build();
    }

    @Override
    protected InMemoryIdempotencyStore createPeer(InMemoryIdempotencyStore first) {
        return first.newPeer();
    }

    @Override
    protected void advanceTime(Duration amount) {
        clock.advance(amount);
    }

    /**
     * Found by {@code batchesBehaveLikeTheModel} (seed 3489875191560771362): confirming by identifier a record whose
     * retention has just ended kept the forgotten record's attempt count and fingerprint instead of starting anew.
     */
    @org.junit.jupiter.api.Test
    void confirmingARecordPastItsRetentionStartsANewOne() {
        InMemoryIdempotencyStore store = createStore(Duration.ofSeconds(10), Duration.ofSeconds(30));
        Claim claim = store.acquire("m-0", "0".repeat(31) + "1");
        assertThat(store.confirm(claim)).isTrue();
        advanceTime(Duration.ofSeconds(30)); // exactly the retention: the record is forgotten

        store.confirm("m-0");

        assertThat(store.attempts("m-0")).as("attempts of the new record").isZero();
        Claim again = store.acquire("m-0", "0".repeat(31) + "2");
        assertThat(again.result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(again.fingerprint()).as("the forgotten record's fingerprint").isNull();
    }
}

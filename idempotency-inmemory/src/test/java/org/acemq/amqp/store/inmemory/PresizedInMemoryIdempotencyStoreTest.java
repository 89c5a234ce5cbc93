package org.acemq.amqp.store.inmemory;

import java.time.Duration;

import org.acemq.amqp.testkit.IdempotencyStoreContract;
import org.acemq.amqp.testkit.MutableClock;

/**
 * The in-memory store built with {@code expectedEntries} against the full store contract: presizing the hash table
 * changes nothing a caller can see.
 */
class PresizedInMemoryIdempotencyStoreTest extends IdempotencyStoreContract<InMemoryIdempotencyStore> {

    private MutableClock clock;

    @Override
    protected InMemoryIdempotencyStore createStore(Duration lease, Duration retention) {
        clock = MutableClock.create();
        return InMemoryIdempotencyStore.builder().lease(lease).retention(retention).clock(clock)
                .expectedEntries(10_000).build();
    }

    @Override
    protected InMemoryIdempotencyStore createPeer(InMemoryIdempotencyStore first) {
        return first.newPeer();
    }

    @Override
    protected void advanceTime(Duration amount) {
        clock.advance(amount);
    }
}

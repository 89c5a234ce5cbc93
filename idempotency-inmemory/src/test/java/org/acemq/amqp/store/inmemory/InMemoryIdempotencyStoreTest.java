package org.acemq.amqp.store.inmemory;

import java.time.Duration;

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
}

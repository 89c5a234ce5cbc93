package org.acemq.amqp.store.inmemory;

import java.time.Duration;
import java.util.List;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.testkit.IdempotencyStoreContract;
import org.acemq.amqp.testkit.MutableClock;

/**
 * The store contract on a store written before fingerprints existed: it implements only the methods it had then, so
 * {@code acquire(id, fingerprint)}, {@code acquireAll(ids, fingerprints)} and {@code recordsFingerprints()} are the
 * SPI's defaults. The kit's fingerprint rules then require claims without fingerprints and calls that still work.
 */
class StoreWithoutFingerprintsTest extends IdempotencyStoreContract<StoreWithoutFingerprintsTest.Legacy> {

    private MutableClock clock;

    @Override
    protected Legacy createStore(Duration lease, Duration retention) {
        clock = MutableClock.create();
        return new Legacy(InMemoryIdempotencyStore.builder().lease(lease).retention(retention).clock(clock).build());
    }

    @Override
    protected Legacy createPeer(Legacy first) {
        return new Legacy(first.inner.newPeer());
    }

    @Override
    protected void advanceTime(Duration amount) {
        clock.advance(amount);
    }

    /** Delegates every method that is not a fingerprint default. */
    static final class Legacy implements LeasedIdempotencyStore {
        final InMemoryIdempotencyStore inner;

        Legacy(InMemoryIdempotencyStore inner) {
            this.inner = inner;
        }

        @Override
        public boolean claim(String messageId) {
            return inner.claim(messageId);
        }

        @Override
        public ClaimResult tryClaim(String messageId) {
            return inner.tryClaim(messageId);
        }

        @Override
        public void confirm(String messageId) {
            inner.confirm(messageId);
        }

        @Override
        public void release(String messageId) {
            inner.release(messageId);
        }

        @Override
        public boolean isConfirmed(String messageId) {
            return inner.isConfirmed(messageId);
        }

        @Override
        public Claim acquire(String messageId) {
            return inner.acquire(messageId);
        }

        @Override
        public List<Claim> acquireAll(List<String> messageIds) {
            return inner.acquireAll(messageIds);
        }

        @Override
        public List<Claim> confirmAll(List<Claim> claims) {
            return inner.confirmAll(claims);
        }

        @Override
        public void releaseAll(List<Claim> claims) {
            inner.releaseAll(claims);
        }

        @Override
        public boolean resetAttempts(String messageId) {
            return inner.resetAttempts(messageId);
        }

        @Override
        public boolean renew(Claim claim) {
            return inner.renew(claim);
        }

        @Override
        public boolean confirm(Claim claim) {
            return inner.confirm(claim);
        }

        @Override
        public boolean release(Claim claim) {
            return inner.release(claim);
        }

        @Override
        public int attempts(String messageId) {
            return inner.attempts(messageId);
        }

        @Override
        public Duration leaseDuration() {
            return inner.leaseDuration();
        }

        @Override
        public Duration retention() {
            return inner.retention();
        }
    }
}

package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;

/**
 * A test double for the store: delegates to an {@link InMemoryIdempotencyStore}; while "down" every call throws
 * {@link StoreUnavailableException}. It also tracks which keys it holds a live claim on (so a handler can prove
 * it runs under a claim), and can make {@code acquire} wait for a permit.
 */
final class SwitchableStore implements LeasedIdempotencyStore {
    private final InMemoryIdempotencyStore delegate;
    private final Set<String> liveClaims = ConcurrentHashMap.newKeySet();
    private final Semaphore acquirePermits = new Semaphore(Integer.MAX_VALUE / 2);
    private final Semaphore confirmPermits = new Semaphore(Integer.MAX_VALUE / 2);
    private final AtomicInteger waitingInConfirm = new AtomicInteger();
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicInteger probesWhileDown = new AtomicInteger();
    private final AtomicInteger failures = new AtomicInteger();
    private final AtomicInteger confirmFailuresLeft = new AtomicInteger();
    private final AtomicInteger claimed = new AtomicInteger();
    private volatile boolean down;
    private volatile String refusedKey;
    private volatile String refusedConfirmKey;
    private final AtomicInteger refusedConfirms = new AtomicInteger();
    private volatile Error acquireError;

    SwitchableStore(InMemoryIdempotencyStore delegate) {
        this.delegate = delegate;
    }

    void down(boolean down) {
        this.down = down;
    }

    /** @return how many claims were granted so far */
    int claimed() {
        return claimed.get();
    }

    /**
     * From now on, only {@code permits} more keys are claimed; the calls after them wait (a batch call waits until there
     * is a permit for each of its keys).
     */
    void gateAcquire(int permits) {
        acquirePermits.drainPermits();
        acquirePermits.release(permits);
    }

    int waitingInAcquire() {
        return waiting.get();
    }

    int probesWhileDown() {
        return probesWhileDown.get();
    }

    boolean holdsClaim(String key) {
        return liveClaims.contains(key);
    }

    /** From now on confirm calls wait (a slow store, not a failing one) until {@link #letConfirmsThrough()}. */
    void holdConfirms() {
        confirmPermits.drainPermits();
    }

    void letConfirmsThrough() {
        confirmPermits.release(Integer.MAX_VALUE / 2);
    }

    int waitingInConfirm() {
        return waitingInConfirm.get();
    }

    /** The next {@code count} confirm calls fail as if the store were down; other calls are unaffected. */
    void failNextConfirms(int count) {
        confirmFailuresLeft.set(count);
    }

    /** From now on {@code acquire(key)} throws {@link InvalidMessageIdException} (the store works otherwise). */
    void refuseKey(String key) {
        this.refusedKey = key;
    }

    /**
     * From now on {@code confirm} of this key throws {@link InvalidMessageIdException} naming it (the store took the key
     * when it was claimed and refuses to record it now; it works otherwise).
     */
    void refuseConfirmOf(String key) {
        this.refusedConfirmKey = key;
    }

    /** @return how many confirms were refused so far */
    int refusedConfirms() {
        return refusedConfirms.get();
    }

    /** From now on every claim call throws this error (a bug or a linkage error in the store, not an outage). */
    void failAcquireWith(Error error) {
        this.acquireError = error;
    }

    /** @return how many calls failed so far */
    int failures() {
        return failures.get();
    }

    private void check() {
        if (down) {
            failures.incrementAndGet();
            throw new StoreUnavailableException("test store is down",
                    new java.net.ConnectException("connection refused"));
        }
    }

    @Override
    public Claim acquire(String messageId) {
        waiting.incrementAndGet();
        try {
            acquirePermits.acquireUninterruptibly();
        } finally {
            waiting.decrementAndGet();
        }
        check();
        throwAcquireError();
        if (messageId.equals(refusedKey)) {
            throw new InvalidMessageIdException("the test store cannot hold this key");
        }
        Claim claim = delegate.acquire(messageId);
        if (claim.claimed()) {
            liveClaims.add(messageId);
            claimed.incrementAndGet();
        }
        return claim;
    }

    /**
     * One call for the batch, as a store that claims many keys in one statement does: all or nothing. It waits until
     * there is a permit for every key (never takes some of them), then fails whole if the store is down or refuses
     * one of the keys (naming it).
     */
    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        waiting.incrementAndGet();
        try {
            acquirePermits.acquireUninterruptibly(messageIds.size());
        } finally {
            waiting.decrementAndGet();
        }
        check();
        throwAcquireError();
        if (refusedKey != null && messageIds.contains(refusedKey)) {
            throw new InvalidMessageIdException(refusedKey, "the test store cannot hold this key", null);
        }
        List<Claim> claims = delegate.acquireAll(messageIds);
        for (Claim claim : claims) {
            if (claim.claimed()) {
                liveClaims.add(claim.messageId());
                claimed.incrementAndGet();
            }
        }
        return claims;
    }

    @Override
    public boolean renew(Claim claim) {
        check();
        return delegate.renew(claim);
    }

    private void throwAcquireError() {
        Error error = acquireError;
        if (error != null) {
            throw error;
        }
    }

    @Override
    public boolean confirm(Claim claim) {
        waitingInConfirm.incrementAndGet();
        confirmPermits.acquireUninterruptibly();
        confirmPermits.release();
        waitingInConfirm.decrementAndGet();
        check();
        if (claim.messageId().equals(refusedConfirmKey)) {
            refusedConfirms.incrementAndGet();
            throw new InvalidMessageIdException(claim.messageId(), "the test store cannot record this key", null);
        }
        if (confirmFailuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            failures.incrementAndGet();
            throw new StoreUnavailableException("test store fails this confirm",
                    new java.net.ConnectException("connection refused"));
        }
        liveClaims.remove(claim.messageId());
        return delegate.confirm(claim);
    }

    @Override
    public boolean release(Claim claim) {
        check();
        liveClaims.remove(claim.messageId());
        return delegate.release(claim);
    }

    @Override
    public int attempts(String messageId) {
        check();
        return delegate.attempts(messageId);
    }

    @Override
    public Duration leaseDuration() {
        return delegate.leaseDuration();
    }

    @Override
    public Duration retention() {
        return delegate.retention();
    }

    @Override
    public boolean claim(String messageId) {
        check();
        return delegate.claim(messageId);
    }

    @Override
    public void confirm(String messageId) {
        check();
        delegate.confirm(messageId);
    }

    @Override
    public void release(String messageId) {
        check();
        delegate.release(messageId);
    }

    @Override
    public boolean isConfirmed(String messageId) {
        if (down) {
            probesWhileDown.incrementAndGet();
        }
        check();
        return delegate.isConfirmed(messageId);
    }
}

package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;

/**
 * A store whose answers a test controls, over an {@link InMemoryIdempotencyStore}: it records the size of every claim,
 * confirm and release call (a single-claim call counts as a call of one), can hold claim or confirm calls until the
 * test lets them go, and can be down or refuse one key. Each batch call is all or nothing, as the JDBC store's
 * statement is: down, or holding the refused key, it fails whole and writes nothing.
 */
final class BatchRecordingStore implements LeasedIdempotencyStore {

    private static final int OPEN = Integer.MAX_VALUE / 2;

    final InMemoryIdempotencyStore delegate;
    /** The number of keys of each claim call, in call order. */
    final List<Integer> acquires = new CopyOnWriteArrayList<>();
    /** The number of claims of each confirm call, in call order. */
    final List<Integer> confirms = new CopyOnWriteArrayList<>();
    /** The number of claims of each release call, in call order. */
    final List<Integer> releases = new CopyOnWriteArrayList<>();
    final AtomicInteger renewals = new AtomicInteger();
    private final Semaphore acquireGate = new Semaphore(OPEN);
    private final Semaphore confirmGate = new Semaphore(OPEN);
    private final AtomicInteger inAcquire = new AtomicInteger();
    private final AtomicInteger inConfirm = new AtomicInteger();
    private volatile boolean down;
    private volatile String refused;

    BatchRecordingStore(InMemoryIdempotencyStore delegate) {
        this.delegate = delegate;
    }

    /** From now on claim calls wait, until {@link #letAcquires}. */
    void holdAcquires() {
        acquireGate.drainPermits();
    }

    /** Lets {@code calls} claim calls through (waiting or future ones). */
    void letAcquires(int calls) {
        acquireGate.release(calls);
    }

    void openAcquires() {
        acquireGate.release(OPEN);
    }

    int waitingInAcquire() {
        return inAcquire.get();
    }

    /** From now on confirm calls wait, until {@link #openConfirms}. */
    void holdConfirms() {
        confirmGate.drainPermits();
    }

    void openConfirms() {
        confirmGate.release(OPEN);
    }

    int waitingInConfirm() {
        return inConfirm.get();
    }

    void down(boolean isDown) {
        this.down = isDown;
    }

    /** From now on a claim call that holds {@code key} fails whole with an exception naming it. */
    void refuse(String key) {
        this.refused = key;
    }

    private static void pass(Semaphore gate, AtomicInteger waiting) {
        waiting.incrementAndGet();
        try {
            gate.acquireUninterruptibly();
        } finally {
            waiting.decrementAndGet();
        }
        gate.release(); // a gate, not a counter of calls: open lets everything through
    }

    private void check() {
        if (down) {
            throw new StoreUnavailableException("test store is down", new java.net.ConnectException("refused"));
        }
    }

    private List<Claim> claim(List<String> ids) {
        acquires.add(ids.size());
        passOnce(acquireGate, inAcquire);
        check();
        String key = refused;
        if (key != null && ids.contains(key)) {
            throw new InvalidMessageIdException(key, "the test store cannot hold this key", null);
        }
        return delegate.acquireAll(ids);
    }

    /** Takes one permit for good: with {@link #letAcquires}{@code (n)} exactly n calls pass. */
    private static void passOnce(Semaphore gate, AtomicInteger waiting) {
        waiting.incrementAndGet();
        try {
            gate.acquireUninterruptibly();
        } finally {
            waiting.decrementAndGet();
        }
    }

    @Override
    public Claim acquire(String messageId) {
        return claim(List.of(messageId)).get(0);
    }

    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        return claim(messageIds);
    }

    @Override
    public boolean confirm(Claim claim) {
        return confirmAll(List.of(claim)).isEmpty();
    }

    @Override
    public List<Claim> confirmAll(List<Claim> claims) {
        confirms.add(claims.size());
        pass(confirmGate, inConfirm);
        check();
        return delegate.confirmAll(claims);
    }

    @Override
    public boolean release(Claim claim) {
        releases.add(1);
        check();
        return delegate.release(claim);
    }

    @Override
    public void releaseAll(List<Claim> claims) {
        releases.add(claims.size());
        check();
        delegate.releaseAll(claims);
    }

    @Override
    public boolean renew(Claim claim) {
        renewals.incrementAndGet();
        check();
        return delegate.renew(claim);
    }

    @Override
    public int attempts(String messageId) {
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
        check();
        return delegate.isConfirmed(messageId);
    }
}

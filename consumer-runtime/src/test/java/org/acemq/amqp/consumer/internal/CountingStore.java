package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.consumer.Ticker;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;

/**
 * A real {@link InMemoryIdempotencyStore} behind a wrapper that records every call (name and keys, and the ticker's
 * time of each confirm attempt) and can fail on demand: claims, confirms or releases down, or one key refused
 * ({@link InvalidMessageIdException} naming it). A failing call writes nothing, as a batch statement would not.
 */
final class CountingStore implements LeasedIdempotencyStore {

    final InMemoryIdempotencyStore delegate;
    private final Ticker ticker;
    /** Each call: {@code "acquireAll [k1, k2]"}, {@code "confirm [k]"}, ... in call order. */
    final List<String> calls = new CopyOnWriteArrayList<>();
    /** The ticker's time of each confirm or confirmAll call, failed or not. */
    final List<Long> confirmTimes = new CopyOnWriteArrayList<>();
    /** When set, a confirm call counts this down on entry and then waits for {@link #confirmGate}. */
    volatile java.util.concurrent.CountDownLatch confirmEntered;
    /** When set, a confirm call waits until it is open. */
    volatile java.util.concurrent.CountDownLatch confirmGate;
    /** How many of the next confirm calls fail ({@link Integer#MAX_VALUE}: all). */
    final AtomicInteger confirmFailures = new AtomicInteger();
    volatile boolean claimsDown;
    /** An error (not an exception) every claim call throws, or null. */
    volatile Error claimError;
    volatile boolean releasesDown;
    /** A key every claim or confirm call that holds it refuses, or null. */
    volatile String refused;
    /** Whether a refusal names the key ({@link InvalidMessageIdException#messageId()}). */
    volatile boolean refusalNamesKey = true;

    CountingStore(Ticker ticker) {
        this(InMemoryIdempotencyStore.builder().build(), ticker);
    }

    CountingStore(InMemoryIdempotencyStore delegate, Ticker ticker) {
        this.delegate = delegate;
        this.ticker = ticker;
    }

    /** @return the calls whose name is {@code name} (e.g. "acquireAll") */
    List<String> calls(String name) {
        List<String> these = new ArrayList<>();
        for (String c : calls) {
            if (c.startsWith(name + " ")) {
                these.add(c);
            }
        }
        return these;
    }

    /** @return how many claim calls (single or batch) the store got */
    int claimCalls() {
        return calls("acquire").size() + calls("acquireAll").size();
    }

    private void claimOrRefuse(String op, List<String> keys) {
        calls.add(op + " " + keys);
        if (claimsDown) {
            throw new StoreUnavailableException("test: the store is down (" + op + ")", null);
        }
        if (claimError != null) {
            throw claimError;
        }
        refuse(keys);
    }

    private void refuse(List<String> keys) {
        String r = refused;
        if (r != null && keys.contains(r)) {
            throw new InvalidMessageIdException(refusalNamesKey ? r : null, "test: the store refuses " + r, null);
        }
    }

    private void confirming(String op, List<Claim> claims) {
        calls.add(op + " " + ids(claims));
        confirmTimes.add(ticker.read());
        java.util.concurrent.CountDownLatch entered = confirmEntered;
        java.util.concurrent.CountDownLatch gate = confirmGate;
        if (entered != null) {
            entered.countDown();
        }
        if (gate != null) {
            try {
                gate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("test: interrupted in confirm", e);
            }
        }
        if (confirmFailures.getAndUpdate(n -> n == Integer.MAX_VALUE ? n : Math.max(0, n - 1)) > 0) {
            throw new StoreUnavailableException("test: confirm fails", null);
        }
        refuse(ids(claims));
    }

    private void releasing(String op, List<Claim> claims) {
        calls.add(op + " " + ids(claims));
        if (releasesDown) {
            throw new StoreUnavailableException("test: release fails", null);
        }
    }

    private static List<String> ids(List<Claim> claims) {
        List<String> ids = new ArrayList<>(claims.size());
        for (Claim c : claims) {
            ids.add(c.messageId());
        }
        return ids;
    }

    @Override
    public Claim acquire(String messageId) {
        claimOrRefuse("acquire", List.of(messageId));
        return delegate.acquire(messageId);
    }

    @Override
    public Claim acquire(String messageId, String fingerprint) {
        claimOrRefuse("acquire", List.of(messageId));
        return delegate.acquire(messageId, fingerprint);
    }

    @Override
    public boolean recordsFingerprints() {
        return delegate.recordsFingerprints();
    }

    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        claimOrRefuse("acquireAll", messageIds);
        return delegate.acquireAll(messageIds);
    }

    @Override
    public List<Claim> acquireAll(List<String> messageIds, List<String> fingerprints) {
        claimOrRefuse("acquireAll", messageIds);
        return delegate.acquireAll(messageIds, fingerprints);
    }

    @Override
    public boolean confirm(Claim claim) {
        confirming("confirm", List.of(claim));
        return delegate.confirm(claim);
    }

    @Override
    public List<Claim> confirmAll(List<Claim> claims) {
        confirming("confirmAll", claims);
        return delegate.confirmAll(claims);
    }

    @Override
    public boolean release(Claim claim) {
        releasing("release", List.of(claim));
        return delegate.release(claim);
    }

    @Override
    public void releaseAll(List<Claim> claims) {
        releasing("releaseAll", claims);
        delegate.releaseAll(claims);
    }

    @Override
    public boolean renew(Claim claim) {
        calls.add("renew [" + claim.messageId() + "]");
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
        return delegate.claim(messageId);
    }

    @Override
    public void confirm(String messageId) {
        delegate.confirm(messageId);
    }

    @Override
    public void release(String messageId) {
        delegate.release(messageId);
    }

    @Override
    public boolean isConfirmed(String messageId) {
        return delegate.isConfirmed(messageId);
    }
}

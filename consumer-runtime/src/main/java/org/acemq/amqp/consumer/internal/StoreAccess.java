package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * The runtime's single door to the store: times every call for the observer, and gives a plain
 * {@link IdempotencyStore} the {@link LeasedIdempotencyStore} shape (attempts counted in this process only, no
 * renewal, release fenced by the store's own owner check).
 */
final class StoreAccess {

    static final String PROBE_KEY = "acemq:health-probe";

    private final IdempotencyStore store;
    private final LeasedIdempotencyStore leased;
    private final ConsumerObserver observer;
    private final ConcurrentHashMap<String, Integer> localAttempts;

    StoreAccess(IdempotencyStore store, ConsumerObserver observer) {
        this.store = store;
        this.leased = store instanceof LeasedIdempotencyStore l ? l : null;
        this.observer = observer;
        this.localAttempts = leased == null ? new ConcurrentHashMap<>() : null;
    }

    /** @return the lease length, or null when the store does not expose leases */
    Duration lease() {
        return leased == null ? null : leased.leaseDuration();
    }

    Claim acquire(String key) {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            Claim claim;
            if (leased != null) {
                claim = leased.acquire(key);
            } else {
                ClaimResult result = store.tryClaim(key);
                int attempt = result == ClaimResult.CLAIMED ? localAttempts.merge(key, 1, Integer::sum)
                        : localAttempts.getOrDefault(key, 0);
                claim = new Claim(key, result, attempt);
            }
            ok = true;
            return claim;
        } finally {
            observer.storeCall(StoreOperation.CLAIM, System.nanoTime() - start, ok);
        }
    }

    /** @return whether the lease was still held (completion is recorded either way) */
    boolean confirm(Claim claim) {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            boolean held;
            if (leased != null) {
                held = leased.confirm(claim);
            } else {
                store.confirm(claim.messageId());
                localAttempts.remove(claim.messageId());
                held = true;
            }
            ok = true;
            return held;
        } finally {
            observer.storeCall(StoreOperation.CONFIRM, System.nanoTime() - start, ok);
        }
    }

    void release(Claim claim) {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            if (leased != null) {
                leased.release(claim);
            } else {
                store.release(claim.messageId());
            }
            ok = true;
        } finally {
            observer.storeCall(StoreOperation.RELEASE, System.nanoTime() - start, ok);
        }
    }

    boolean renew(Claim claim) {
        if (leased == null) {
            return true;
        }
        long start = System.nanoTime();
        boolean ok = false;
        try {
            boolean renewed = leased.renew(claim);
            ok = true;
            return renewed;
        } finally {
            observer.storeCall(StoreOperation.RENEW, System.nanoTime() - start, ok);
        }
    }

    /** A cheap read that proves the store answers. */
    void probe() {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            store.isConfirmed(PROBE_KEY);
            ok = true;
        } finally {
            observer.storeCall(StoreOperation.PROBE, System.nanoTime() - start, ok);
        }
    }
}

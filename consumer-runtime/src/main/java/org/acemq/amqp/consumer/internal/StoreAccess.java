package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.consumer.Ticker;
import org.acemq.amqp.consumer.StoreOperation;

/**
 * The runtime's single door to the store: times every call for the observer (only when someone observes), and gives a
 * plain {@link IdempotencyStore} the {@link LeasedIdempotencyStore} shape (attempts counted in this process only, no
 * renewal, release fenced by the store's own owner check). The batch calls go to the leased store's batch SPI, one
 * call (and for the JDBC store one statement and one commit) per batch; a plain store is called once per key.
 */
final class StoreAccess {

    static final String PROBE_KEY = "acemq:health-probe";

    private final IdempotencyStore store;
    private final LeasedIdempotencyStore leased;
    private final SafeObserver observer;
    private final Ticker ticker;
    private final boolean timed;
    private final ConcurrentHashMap<String, Integer> localAttempts;

    StoreAccess(IdempotencyStore store, SafeObserver observer, Ticker ticker) {
        this.store = store;
        this.leased = store instanceof LeasedIdempotencyStore l ? l : null;
        this.observer = observer;
        this.ticker = ticker;
        this.timed = observer.active();
        this.localAttempts = leased == null ? new ConcurrentHashMap<>() : null;
    }

    private long start() {
        return timed ? ticker.read() : 0;
    }

    private void done(StoreOperation operation, long start, boolean ok) {
        done(operation, start, ok, 1);
    }

    /** @param keys how many keys the call covered (reported with the time, for the per-message store time) */
    private void done(StoreOperation operation, long start, boolean ok, int keys) {
        if (timed) {
            observer.storeCall(operation, ticker.read() - start, ok, keys);
        }
    }

    /** @return the lease length, or null when the store does not expose leases */
    /** @return the store's outbox, if it keeps one (the JDBC store), else null */
    org.acemq.amqp.api.OutboxStore outbox() {
        return store instanceof org.acemq.amqp.api.OutboxStore o ? o : null;
    }

    Duration lease() {
        return leased == null ? null : leased.leaseDuration();
    }

    /**
     * @throws org.acemq.amqp.api.InvalidMessageIdException if the store refuses this key (the message's fact)
     * @throws RuntimeException if the store fails (down, as far as this call can tell)
     */
    Claim acquire(String key) {
        return acquire(key, null);
    }

    /**
     * @param fingerprint the content's fingerprint, or null (recorded by a store that records fingerprints)
     * @throws org.acemq.amqp.api.InvalidMessageIdException if the store refuses this key (the message's fact)
     * @throws RuntimeException if the store fails (down, as far as this call can tell)
     */
    Claim acquire(String key, String fingerprint) {
        long start = start();
        boolean ok = false;
        try {
            Claim claim;
            if (leased != null) {
                claim = fingerprint == null ? leased.acquire(key) : leased.acquire(key, fingerprint);
            } else {
                ClaimResult result = store.tryClaim(key);
                int attempt = result == ClaimResult.CLAIMED ? localAttempts.merge(key, 1, Integer::sum)
                        : localAttempts.getOrDefault(key, 0);
                claim = new Claim(key, result, attempt);
            }
            ok = true;
            return claim;
        } finally {
            done(StoreOperation.CLAIM, start, ok);
        }
    }

    /** @return whether the store claims many keys in one call (a plain store is asked key by key) */
    boolean batches() {
        return leased != null;
    }

    /**
     * Claims many keys in one store call ({@link LeasedIdempotencyStore#acquireAll}); all or nothing.
     *
     * @param keys distinct keys, at least one; a plain store is not asked here (see {@link #batches()})
     * @return one claim per key, in order
     * @throws org.acemq.amqp.api.InvalidMessageIdException if the store refuses one key (nothing is claimed)
     * @throws RuntimeException if the store fails (nothing is claimed)
     */
    List<Claim> acquireAll(List<String> keys) {
        if (keys.size() == 1) {
            return List.of(acquire(keys.get(0)));
        }
        long start = start();
        boolean ok = false;
        try {
            List<Claim> claims = leased.acquireAll(keys);
            ok = true;
            return claims;
        } finally {
            done(StoreOperation.CLAIM, start, ok, keys.size());
        }
    }

    /**
     * As {@link #acquireAll(List)}, recording one fingerprint per key where the store records fingerprints.
     *
     * @param fingerprints one fingerprint (or null) per key
     */
    List<Claim> acquireAll(List<String> keys, List<String> fingerprints) {
        if (keys.size() == 1) {
            return List.of(acquire(keys.get(0), fingerprints.get(0)));
        }
        long start = start();
        boolean ok = false;
        try {
            List<Claim> claims = leased.acquireAll(keys, fingerprints);
            ok = true;
            return claims;
        } finally {
            done(StoreOperation.CLAIM, start, ok, keys.size());
        }
    }

    /**
     * Records completion of many claims in one store call; all or nothing where the store can.
     *
     * @return the claims that no longer held their lease (completion is recorded for them all the same)
     */
    List<Claim> confirmAll(List<Claim> claims) {
        if (claims.size() == 1) {
            Claim claim = claims.get(0);
            return confirm(claim) ? List.of() : List.of(claim);
        }
        long start = start();
        boolean ok = false;
        try {
            List<Claim> lost;
            if (leased != null) {
                lost = leased.confirmAll(claims);
            } else {
                lost = new ArrayList<>(0);
                for (Claim claim : claims) {
                    store.confirm(claim.messageId());
                    localAttempts.remove(claim.messageId());
                }
            }
            ok = true;
            return lost;
        } finally {
            done(StoreOperation.CONFIRM, start, ok, claims.size());
        }
    }

    /** Releases many claims in one store call; a claim no longer current is left alone. */
    void releaseAll(List<Claim> claims) {
        if (claims.size() == 1) {
            release(claims.get(0));
            return;
        }
        long start = start();
        boolean ok = false;
        try {
            if (leased != null) {
                leased.releaseAll(claims);
            } else {
                for (Claim claim : claims) {
                    store.release(claim.messageId());
                }
            }
            ok = true;
        } finally {
            done(StoreOperation.RELEASE, start, ok, claims.size());
        }
    }

    /** @return whether the lease was still held (completion is recorded either way) */
    boolean confirm(Claim claim) {
        long start = start();
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
            done(StoreOperation.CONFIRM, start, ok);
        }
    }

    void release(Claim claim) {
        long start = start();
        boolean ok = false;
        try {
            if (leased != null) {
                leased.release(claim);
            } else {
                store.release(claim.messageId());
            }
            ok = true;
        } finally {
            done(StoreOperation.RELEASE, start, ok);
        }
    }

    boolean renew(Claim claim) {
        if (leased == null) {
            return true;
        }
        long start = start();
        boolean ok = false;
        try {
            boolean renewed = leased.renew(claim);
            ok = true;
            return renewed;
        } finally {
            done(StoreOperation.RENEW, start, ok);
        }
    }

    /** A cheap read that proves the store answers. */
    void probe() {
        long start = start();
        boolean ok = false;
        try {
            store.isConfirmed(PROBE_KEY);
            ok = true;
        } finally {
            done(StoreOperation.PROBE, start, ok);
        }
    }
}

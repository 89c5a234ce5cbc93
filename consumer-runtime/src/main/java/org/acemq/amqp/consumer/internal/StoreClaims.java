package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.List;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.consumer.Ticker;

/**
 * The claim stage: one store call for the keys of a batch (key by key for a store that does
 * not batch), each answer recorded in its delivery's facts, a refused key told apart from an outage.
 */
final class StoreClaims {

    private final String name;
    private final StoreAccess store;
    private final StoreGate gate;
    private final SafeObserver observer;
    private final Ticker ticker;
    private final long beatNanos;
    private final boolean fingerprints;

    /**
     * @param beatNanos the lease renewal period, 0 if leases are not renewed
     * @param fingerprints whether the subscription computes fingerprints (recorded with the claims)
     */
    StoreClaims(String name, StoreAccess store, StoreGate gate, SafeObserver observer, Ticker ticker, long beatNanos,
                boolean fingerprints) {
        this.name = name;
        this.store = store;
        this.gate = gate;
        this.observer = observer;
        this.ticker = ticker;
        this.beatNanos = beatNanos;
        this.fingerprints = fingerprints;
    }

    /**
     * Asks the store for every key in one call; each delivery's facts get its answer. A key the store refuses is that
     * message's fact, not an outage: its facts say the key was refused, and the others are asked again. A failure of
     * the whole call is an outage for each of them, and nothing was claimed.
     */
    void claim(List<Delivery> ds) {
        List<Delivery> left = ds;
        while (!left.isEmpty()) {
            List<Claim> claims;
            try {
                claims = ask(left);
            } catch (InvalidMessageIdException e) {
                gate.success();
                left = refused(left, e);
                continue;
            } catch (RuntimeException e) {
                gate.failure(e);
                String error = Errors.describe(e);
                for (Delivery d : left) {
                    observer.claimFailed(name);
                    d.facts = d.facts.storeFailed(error, false);
                }
                return;
            }
            gate.success();
            long now = ticker.read();
            for (int i = 0; i < claims.size(); i++) {
                answered(left.get(i), claims.get(i), now);
            }
            left = left.subList(claims.size(), left.size());
        }
    }

    /** @return the store's answers for the first of {@code ds} (a plain store is asked key by key) or for all */
    private List<Claim> ask(List<Delivery> ds) {
        if (store.batches()) {
            return fingerprints ? store.acquireAll(keys(ds), fingerprints(ds))
                    : store.acquireAll(keys(ds));
        }
        String key = ds.get(0).key();
        try {
            return List.of(store.acquire(key, ds.get(0).arrival.fingerprint()));
        } catch (InvalidMessageIdException e) {
            throw e.messageId() != null ? e : new InvalidMessageIdException(key, e.getMessage(), e);
        }
    }

    /**
     * @return the deliveries still to claim: all but the one whose key was refused; if the store did not say which key
     *     it refused, none (each of them is then claimed alone when a thread starts it)
     */
    private List<Delivery> refused(List<Delivery> ds, InvalidMessageIdException e) {
        String key = e.messageId();
        boolean named = false;
        for (Delivery d : ds) {
            named |= d.key().equals(key);
        }
        List<Delivery> rest = new ArrayList<>(ds.size());
        for (int i = 0; i < ds.size(); i++) {
            Delivery d = ds.get(i);
            if (named ? d.key().equals(key) : i == 0 && ds.size() == 1) {
                observer.claimFailed(name);
                d.facts = d.facts.storeFailed(Errors.describe(e), true);
            } else if (!named && ds.size() > 1) {
                d.claimAtStart = true; // the store did not say which: each is asked alone when it starts
            } else {
                rest.add(d);
            }
        }
        return rest;
    }

    private static List<String> keys(List<Delivery> ds) {
        List<String> keys = new ArrayList<>(ds.size());
        for (Delivery d : ds) {
            keys.add(d.key());
        }
        return keys;
    }

    private static List<String> fingerprints(List<Delivery> ds) {
        List<String> fps = new ArrayList<>(ds.size());
        for (Delivery d : ds) {
            fps.add(d.arrival.fingerprint());
        }
        return fps;
    }

    private void answered(Delivery d, Claim claim, long now) {
        observer.claim(name, claim.result());
        if (claim.claimed()) {
            d.claimed(claim, now, beatNanos);
        }
        String fingerprint = d.arrival.fingerprint();
        boolean conflict = !claim.claimed() && fingerprint != null && claim.fingerprint() != null
                && !fingerprint.equals(claim.fingerprint());
        if (conflict) {
            d.recordedFingerprint = claim.fingerprint();
            observer.conflict(name, d.key(), claim.fingerprint(), fingerprint);
        }
        d.facts = d.facts.claimed(claim.result(), claim.attempt(), conflict);
    }
}

package org.acemq.amqp.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * An {@link IdempotencyStore} that exposes its leases: one atomic claim that also reports the attempt number, lease
 * renewal (heartbeat) while work runs, and fenced release.
 *
 * <p>The runtime prefers this interface when a store implements it; both stores shipped with AceMQ do. A plain
 * {@link IdempotencyStore} still works, but then the runtime cannot renew leases and must count attempts itself
 * (per process only).
 *
 * <h2>Attempts and fencing</h2>
 * Every successful claim of an unconfirmed identifier increments its <em>attempt</em> count: the first claim is
 * attempt 1, a claim after a release is attempt 2, a takeover after an expired lease (the previous owner crashed)
 * is attempt 3, and so on. The count survives releases and takeovers and is forgotten together with the
 * identifier. Brokers do not reliably count a delivery attempt when a consumer crashes, so this count is what
 * lets a consumer stop a message that crash-loops its consumers.
 *
 * <p>A {@link Claim} is meaningful only to the store instance (owner) that returned it; passing it to another
 * instance is undefined. Because the attempt number only grows, a {@link Claim} names exactly one lease: {@link #renew(Claim)} and
 * {@link #release(Claim)} act only while that very lease is still the current one, so a worker that was paused
 * past its lease cannot disturb the owner that took over. {@link #confirm(Claim)} records completion in every
 * case (the work did complete) and reports whether the lease was still held. Whether a lease that lapsed but that
 * nobody took over can still be renewed or released by its owner is left to the implementation; callers treat
 * {@code false} from either as "the lease is gone".
 *
 * <h2>Batches</h2>
 * {@link #acquireAll}, {@link #confirmAll} and {@link #releaseAll} do for many claims what the single-claim methods do
 * for one, with exactly the same guarantees per identifier (of concurrent callers exactly one gets
 * {@link ClaimResult#CLAIMED}; leases and fencing per claim). A store that can, does a batch in one round trip and one
 * commit: the runtime hands it whatever deliveries are waiting, so a busy consumer pays one round trip for many
 * messages and a lone message pays exactly one, as before. The defaults loop over the single-claim methods.
 *
 * <h2>Fingerprints (optional)</h2>
 * A store may record a <em>fingerprint</em> with each claim: a short text the caller computes from the message's
 * content (the runtime hashes the body and the headers a subscription names). A store that does, answers
 * {@link #recordsFingerprints()} with {@code true} and reports, in every {@link Claim} it returns, the fingerprint it
 * holds for the identifier: the one just recorded for {@link ClaimResult#CLAIMED}, and the one recorded by the claim
 * that confirmed the identifier or holds it for {@link ClaimResult#ALREADY_CONFIRMED} and
 * {@link ClaimResult#IN_PROGRESS}. The caller then tells a true duplicate (same key, same content) from a copy that
 * differs (same key, other content). Every new claim of an unconfirmed identifier (after a release or a lapsed lease)
 * records its own fingerprint, replacing the earlier one; confirming keeps it; forgetting the identifier forgets it.
 * The defaults ignore fingerprints, so a store written before they existed keeps working: its claims report none, and
 * the runtime then cannot detect a differing copy.
 *
 * <p><b>Threading:</b> safe for concurrent use; every method may block on I/O.
 */
public interface LeasedIdempotencyStore extends IdempotencyStore {

    /**
     * Atomically does what {@link #tryClaim(String)} does and reports the attempt number, in one step.
     *
     * @param messageId the identifier
     * @return the result; for {@link ClaimResult#CLAIMED} the claim to pass to {@link #renew}, {@link #confirm(Claim)}
     *     or {@link #release(Claim)}
     * @throws NullPointerException if {@code messageId} is null
     * @throws InvalidMessageIdException if {@code messageId} breaks {@link MessageIds#requireValid} or the backing
     *     storage cannot hold it (nothing is written; the store goes on working for other identifiers)
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    Claim acquire(String messageId);

    /**
     * Does what {@link #acquire(String)} does and, where the store {@linkplain #recordsFingerprints() records
     * fingerprints}, records {@code fingerprint} with a successful claim and reports in the result the fingerprint held
     * for the identifier (see the class documentation). The default ignores the fingerprint.
     *
     * @param messageId the identifier
     * @param fingerprint the content's fingerprint, or null for none; at most {@link MessageIds#MAX_FINGERPRINT_LENGTH}
     *     characters, storable as {@link MessageIds#requireValidFingerprint} says
     * @return the result, as {@link #acquire(String)}, with the held fingerprint
     * @throws NullPointerException if {@code messageId} is null
     * @throws InvalidMessageIdException if {@code messageId} is refused, as for {@link #acquire(String)}
     * @throws IllegalArgumentException if {@code fingerprint} breaks {@link MessageIds#requireValidFingerprint}
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    default Claim acquire(String messageId, String fingerprint) {
        return acquire(messageId);
    }

    /**
     * @return whether this store records the fingerprints passed to {@link #acquire(String, String)} and
     *     {@link #acquireAll(List, List)} and reports them in its claims; {@code false} (the default) for a store that
     *     ignores them
     */
    default boolean recordsFingerprints() {
        return false;
    }

    /**
     * Extends the lease of a live claim by {@link #leaseDuration()} from now.
     *
     * @param claim a claim obtained from {@link #acquire}
     * @return {@code true} if the lease was still this claim's and is now extended; {@code false} if it was lost
     *     (taken over, released or confirmed), in which case nothing changes
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    boolean renew(Claim claim);

    /**
     * Records completion of the work done under {@code claim}. Completion is recorded even if the lease had been
     * lost in the meantime, because the work did happen.
     *
     * @param claim a claim obtained from {@link #acquire}
     * @return {@code true} if the claim still held its lease; {@code false} if another owner had taken it over or
     *     it had lapsed (completion is recorded all the same)
     * @throws StoreUnavailableException if the backing storage cannot be reached; completion is then not recorded
     */
    boolean confirm(Claim claim);

    /**
     * Gives up {@code claim} without recording completion, if it is still the current lease. The attempt count is
     * kept.
     *
     * @param claim a claim obtained from {@link #acquire}
     * @return {@code true} if the claim was released; {@code false} if it was no longer the current lease (nothing
     *     changed)
     * @throws StoreUnavailableException if the backing storage cannot be reached; the lease then lapses on its own
     */
    boolean release(Claim claim);

    /**
     * Reads how many times an identifier has been claimed since the store last forgot it. Confirming does not reset
     * the count (a confirmed identifier reports the claims it took); forgetting does.
     *
     * @param messageId the identifier
     * @return the attempt count, or 0 if the store knows nothing of the identifier
     */
    int attempts(String messageId);

    /** @return how long a claim lasts unless renewed */
    Duration leaseDuration();

    /** @return how long a confirmed identifier is remembered */
    Duration retention();

    /**
     * Does what {@link #acquire(String)} does for each identifier, in one step where the store can. The result has
     * one claim per identifier, in the same order; an empty list gives an empty list. An identifier that appears twice
     * in one call is claimed at most once: its later copies read {@link ClaimResult#IN_PROGRESS} with the same
     * attempt (held by this very call), exactly as if the call had been made once per identifier, in order.
     *
     * <p>All or nothing: if the store cannot be reached, nothing is claimed and {@link StoreUnavailableException} is
     * thrown. If one identifier is refused, {@link InvalidMessageIdException} is thrown, its
     * {@link InvalidMessageIdException#messageId() messageId()} is that identifier, and nothing is claimed (and no
     * attempt counted) for any identifier of the call; the caller settles that message and asks again for the others.
     *
     * @param messageIds the identifiers, each valid per {@link MessageIds#requireValid}
     * @return one claim per identifier, in order
     * @throws NullPointerException if the list or one of its identifiers is null
     * @throws InvalidMessageIdException if an identifier is refused
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    default List<Claim> acquireAll(List<String> messageIds) {
        for (String id : messageIds) {
            MessageIds.requireValid(id);
        }
        List<Claim> claims = new ArrayList<>(messageIds.size());
        try {
            for (String id : messageIds) {
                claims.add(acquire(id));
            }
        } catch (RuntimeException e) {
            giveBack(claims, e);
            throw e;
        }
        return claims;
    }

    /** One call, all or nothing: gives back what a failed batch call claimed (best effort; a lease lapses anyway). */
    private void giveBack(List<Claim> claims, RuntimeException failure) {
        for (Claim claim : claims) {
            if (claim.claimed()) {
                try {
                    release(claim);
                } catch (RuntimeException suppressed) {
                    failure.addSuppressed(suppressed);
                }
            }
        }
    }

    /**
     * Does what {@link #acquire(String, String)} does for each identifier, with the guarantees of
     * {@link #acquireAll(List)} (order, repeated identifiers, all or nothing, a refused identifier named). A repeated
     * identifier's later copies report the fingerprint its first copy recorded. The default calls
     * {@link #acquireAll(List)} for a store that does not record fingerprints, and {@link #acquire(String, String)} for
     * each identifier for one that does.
     *
     * @param messageIds the identifiers, each valid per {@link MessageIds#requireValid}
     * @param fingerprints one fingerprint (or null) per identifier, same length and order
     * @return one claim per identifier, in order
     * @throws NullPointerException if a list or one of its identifiers is null
     * @throws IllegalArgumentException if the lists differ in length, or a fingerprint is refused
     * @throws InvalidMessageIdException if an identifier is refused
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    default List<Claim> acquireAll(List<String> messageIds, List<String> fingerprints) {
        if (messageIds.size() != fingerprints.size()) {
            throw new IllegalArgumentException("one fingerprint per identifier: " + messageIds.size()
                    + " identifiers, " + fingerprints.size() + " fingerprints");
        }
        if (!recordsFingerprints()) {
            return acquireAll(messageIds);
        }
        for (int i = 0; i < messageIds.size(); i++) {
            MessageIds.requireValid(messageIds.get(i));
            MessageIds.requireValidFingerprint(fingerprints.get(i));
        }
        List<Claim> claims = new ArrayList<>(messageIds.size());
        try {
            for (int i = 0; i < messageIds.size(); i++) {
                claims.add(acquire(messageIds.get(i), fingerprints.get(i)));
            }
        } catch (RuntimeException e) {
            giveBack(claims, e);
            throw e;
        }
        return claims;
    }

    /**
     * Does what {@link #confirm(Claim)} does for each claim, in one step where the store can (then completion is
     * recorded for all of them or for none). The default confirms them one by one, so a failure part-way leaves the
     * earlier ones recorded, which is safe: confirming again is idempotent. A claim given twice is confirmed once; its
     * second copy is reported as lost, as a second {@link #confirm(Claim)} would be. Every identifier is checked before
     * anything is written: one that is refused throws {@link InvalidMessageIdException} naming it, and nothing is
     * confirmed.
     *
     * @param claims claims obtained from {@link #acquire} or {@link #acquireAll}
     * @return the claims that no longer held their lease (completion is recorded for them all the same), in the order
     *     given; usually empty
     * @throws NullPointerException if the list or one of its claims is null
     * @throws InvalidMessageIdException if an identifier is refused
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    default List<Claim> confirmAll(List<Claim> claims) {
        for (Claim claim : claims) {
            MessageIds.requireValid(claim.messageId());
        }
        List<Claim> lost = List.of();
        for (Claim claim : claims) {
            if (!confirm(claim)) {
                if (lost.isEmpty()) {
                    lost = new ArrayList<>();
                }
                lost.add(claim);
            }
        }
        return lost;
    }

    /**
     * Does what {@link #release(Claim)} does for each claim, in one step where the store can. A claim that is no
     * longer the current lease is left alone, as with {@link #release(Claim)}; a claim that is not
     * {@link ClaimResult#CLAIMED} has no lease and is skipped. Every identifier is checked before anything is written.
     *
     * @param claims claims obtained from {@link #acquire} or {@link #acquireAll}
     * @throws NullPointerException if the list or one of its claims is null
     * @throws InvalidMessageIdException if an identifier is refused (nothing is released)
     * @throws StoreUnavailableException if the backing storage cannot be reached; the leases then lapse on their own
     */
    default void releaseAll(List<Claim> claims) {
        for (Claim claim : claims) {
            MessageIds.requireValid(claim.messageId());
        }
        for (Claim claim : claims) {
            if (claim.claimed()) {
                release(claim);
            }
        }
    }

    /**
     * Sets the attempt count of an identifier that is neither confirmed nor held by a live claim back to 0, so that
     * its next claim is attempt 1 again. This is how an operator re-drives a message that was dead-lettered after
     * using up its attempts: fix the cause, reset, then move the message back to its queue. A confirmed identifier is
     * left alone (a copy of it is a duplicate), and so is one whose lease is live (someone is working on it). The
     * stores shipped with AceMQ forget such an identifier altogether, exactly as at the end of its retention; the
     * owner of a lapsed lease on it can then no longer renew or release that lease. One atomic step, safe against
     * concurrent claims: of a reset and a claim racing, either the claim counts from 1 or the reset answers
     * {@code false}.
     *
     * @param messageId the identifier
     * @return {@code true} if a count was reset; {@code false} if the store knows nothing of the identifier, or it is
     *     confirmed, or its lease is live
     * @throws NullPointerException if {@code messageId} is null
     * @throws InvalidMessageIdException if {@code messageId} breaks {@link MessageIds#requireValid}
     * @throws UnsupportedOperationException if the store cannot do this (the default)
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    default boolean resetAttempts(String messageId) {
        throw new UnsupportedOperationException(getClass().getName() + " cannot reset attempt counts");
    }
}

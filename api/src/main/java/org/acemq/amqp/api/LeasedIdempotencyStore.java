package org.acemq.amqp.api;

import java.time.Duration;

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
     * @throws IllegalArgumentException if {@code messageId} is blank or longer than {@link MessageIds#MAX_LENGTH}
     * @throws StoreUnavailableException if the backing storage cannot be reached
     */
    Claim acquire(String messageId);

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
}

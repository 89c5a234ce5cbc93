package org.acemq.amqp.api;

import java.util.Objects;

/**
 * What {@link LeasedIdempotencyStore#acquire} found, and for a successful claim the handle that names the lease.
 *
 * @param messageId the identifier that was claimed
 * @param result whether the caller owns the identifier now, or why not
 * @param attempt for {@link IdempotencyStore.ClaimResult#CLAIMED}: this claim's attempt number (1 for the first
 *     claim); otherwise the number of unconfirmed claims recorded so far (may be 0 when the store does not know)
 * @param fingerprint the fingerprint the store holds for the identifier (see
 *     {@link LeasedIdempotencyStore#acquire(String, String)}): for {@link IdempotencyStore.ClaimResult#CLAIMED} the
 *     one this claim recorded, for {@link IdempotencyStore.ClaimResult#ALREADY_CONFIRMED} and
 *     {@link IdempotencyStore.ClaimResult#IN_PROGRESS} the one recorded by the claim that confirmed or holds it;
 *     null when none was recorded or the store does not record fingerprints
 */
public record Claim(String messageId, IdempotencyStore.ClaimResult result, int attempt, String fingerprint) {

    /**
     * Validates the fields.
     *
     * @param messageId the identifier that was claimed; not null
     * @param result whether the caller owns the identifier now; not null
     * @param attempt {@code >= 0}, and {@code >= 1} for {@link IdempotencyStore.ClaimResult#CLAIMED}
     * @param fingerprint the recorded fingerprint, or null
     */
    public Claim {
        Objects.requireNonNull(messageId, "messageId");
        Objects.requireNonNull(result, "result");
        if (attempt < 0) {
            throw new IllegalArgumentException("attempt must be >= 0, but was " + attempt);
        }
        if (result == IdempotencyStore.ClaimResult.CLAIMED && attempt < 1) {
            throw new IllegalArgumentException("attempt of a CLAIMED claim must be >= 1, but was " + attempt);
        }
    }

    /**
     * A claim without a fingerprint, as every store that does not record fingerprints returns it.
     *
     * @param messageId the identifier that was claimed; not null
     * @param result whether the caller owns the identifier now; not null
     * @param attempt {@code >= 0}, and {@code >= 1} for {@link IdempotencyStore.ClaimResult#CLAIMED}
     */
    public Claim(String messageId, IdempotencyStore.ClaimResult result, int attempt) {
        this(messageId, result, attempt, null);
    }

    /** @return whether the caller owns the identifier now */
    public boolean claimed() {
        return result == IdempotencyStore.ClaimResult.CLAIMED;
    }

    /**
     * @param recorded the fingerprint to report
     * @return this claim with {@code recorded} as its fingerprint
     */
    public Claim withFingerprint(String recorded) {
        return java.util.Objects.equals(recorded, fingerprint) ? this
                : new Claim(messageId, result, attempt, recorded);
    }
}

package org.acemq.amqp.store.inmemory;

/**
 * What the store remembers about one identifier: immutable, so a map update is a single reference swap and a
 * conditional {@code remove(key, entry)} removes exactly the version that was inspected.
 *
 * <p>32 bytes with compressed oops (12-byte header, the int, the reference, the long, padded): state, owner and
 * attempt share one int; the fingerprint is the caller's string (null when none was given).
 */
final class Entry {

    static final int CLAIMED = 1;
    static final int RELEASED = 2;
    static final int CONFIRMED = 3;

    static final int ATTEMPT_BITS = 20;
    static final int MAX_ATTEMPT = (1 << ATTEMPT_BITS) - 1;
    static final int OWNER_BITS = 10;
    static final int MAX_OWNER = (1 << OWNER_BITS) - 1;

    /**
     * CLAIMED: the epoch millisecond the lease ends (the entry is forgotten {@code retention} later, unless taken
     * over). RELEASED and CONFIRMED: the epoch millisecond the entry is forgotten.
     */
    final long deadline;

    /** state (2 bits) | owner index (10 bits, 0 when not claimed) | attempt count (20 bits). */
    private final int bits;

    /** The fingerprint recorded by the claim that made this entry (kept through renewal and confirmation), or null. */
    final String fingerprint;

    private Entry(int state, int owner, int attempt, long deadline, String fingerprint) {
        this.bits = state << (OWNER_BITS + ATTEMPT_BITS) | owner << ATTEMPT_BITS | attempt;
        this.deadline = deadline;
        this.fingerprint = fingerprint;
    }

    static Entry claimed(int owner, int attempt, long leaseEnd, String fingerprint) {
        return new Entry(CLAIMED, owner, attempt, leaseEnd, fingerprint);
    }

    static Entry released(int attempt, long forgetAt, String fingerprint) {
        return new Entry(RELEASED, 0, attempt, forgetAt, fingerprint);
    }

    static Entry confirmed(int attempt, long forgetAt, String fingerprint) {
        return new Entry(CONFIRMED, 0, attempt, forgetAt, fingerprint);
    }

    /** The attempt after {@code attempt}; saturates (see the class Javadoc of the store). */
    static int next(int attempt) {
        return attempt < MAX_ATTEMPT ? attempt + 1 : MAX_ATTEMPT;
    }

    int state() {
        return bits >>> (OWNER_BITS + ATTEMPT_BITS);
    }

    int owner() {
        return (bits >>> ATTEMPT_BITS) & MAX_OWNER;
    }

    int attempt() {
        return bits & MAX_ATTEMPT;
    }

    boolean isClaimed() {
        return state() == CLAIMED;
    }

    boolean isConfirmed() {
        return state() == CONFIRMED;
    }

    /** @return whether this is a claim whose lease has not ended at {@code now} */
    boolean isLiveClaim(long now) {
        return isClaimed() && now < deadline;
    }

    /** @return whether this is the lease {@code attempt} of {@code owner}, live or lapsed */
    boolean isLease(int owner, int attempt) {
        return isClaimed() && owner() == owner && attempt() == attempt;
    }

    @Override
    public String toString() {
        String state = state() == CLAIMED ? "CLAIMED by owner #" + owner() : state() == RELEASED ? "RELEASED" : "CONFIRMED";
        return state + ", attempt " + attempt() + ", deadline " + deadline;
    }
}

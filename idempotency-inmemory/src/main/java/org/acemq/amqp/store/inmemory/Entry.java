package org.acemq.amqp.store.inmemory;

/**
 * What the store remembers about one identifier: immutable, so a map update is a single reference swap and a
 * conditional {@code remove(key, entry)} removes exactly the version that was inspected.
 *
 * <p>24 bytes with compressed oops (12-byte header, the int, the long): state, owner and attempt share one int. An entry
 * with a fingerprint is a subclass: the runtime's fingerprints (32 lowercase hexadecimal digits) are kept as two longs
 * (40 bytes in all, no string), any other as the caller's string.
 */
class Entry {

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

    private Entry(int state, int owner, int attempt, long deadline) {
        this.bits = state << (OWNER_BITS + ATTEMPT_BITS) | owner << ATTEMPT_BITS | attempt;
        this.deadline = deadline;
    }

    /** An entry of {@code state} with the fingerprint {@code print} (null for none). */
    private static Entry of(int state, int owner, int attempt, long deadline, String print) {
        if (print == null) {
            return new Entry(state, owner, attempt, deadline);
        }
        if (print.length() == 32 && isLowerHex(print)) {
            return new Hex128(state, owner, attempt, deadline, Long.parseUnsignedLong(print, 0, 16, 16),
                    Long.parseUnsignedLong(print, 16, 32, 16));
        }
        return new Text(state, owner, attempt, deadline, print);
    }

    /** An entry of {@code state} with the same fingerprint as {@code from} (null: none), without re-encoding it. */
    private static Entry like(int state, int owner, int attempt, long deadline, Entry from) {
        if (from instanceof Hex128 h) {
            return new Hex128(state, owner, attempt, deadline, h.high, h.low);
        }
        if (from instanceof Text t) {
            return new Text(state, owner, attempt, deadline, t.print);
        }
        return new Entry(state, owner, attempt, deadline);
    }

    private static boolean isLowerHex(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f')) {
                return false;
            }
        }
        return true;
    }

    static Entry claimed(int owner, int attempt, long leaseEnd, String fingerprint) {
        return of(CLAIMED, owner, attempt, leaseEnd, fingerprint);
    }

    /** The same lease, renewed: a claim with {@code from}'s fingerprint. */
    static Entry claimed(int owner, int attempt, long leaseEnd, Entry from) {
        return like(CLAIMED, owner, attempt, leaseEnd, from);
    }

    static Entry released(int attempt, long forgetAt, Entry from) {
        return like(RELEASED, 0, attempt, forgetAt, from);
    }

    static Entry confirmed(int attempt, long forgetAt, Entry from) {
        return like(CONFIRMED, 0, attempt, forgetAt, from);
    }

    /** @return the fingerprint recorded by the claim that made this entry (kept through renewal and confirmation) */
    String fingerprint() {
        return null;
    }

    /** A fingerprint of 32 lowercase hexadecimal digits, as two longs. */
    private static final class Hex128 extends Entry {
        final long high;
        final long low;

        Hex128(int state, int owner, int attempt, long deadline, long high, long low) {
            super(state, owner, attempt, deadline);
            this.high = high;
            this.low = low;
        }

        @Override
        String fingerprint() {
            return java.util.HexFormat.of().toHexDigits(high) + java.util.HexFormat.of().toHexDigits(low);
        }
    }

    /** Any other fingerprint, as given. */
    private static final class Text extends Entry {
        final String print;

        Text(int state, int owner, int attempt, long deadline, String print) {
            super(state, owner, attempt, deadline);
            this.print = print;
        }

        @Override
        String fingerprint() {
            return print;
        }
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

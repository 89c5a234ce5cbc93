package org.acemq.amqp.store.inmemory;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.BiFunction;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.api.StoreUnavailableException;

/**
 * A {@link LeasedIdempotencyStore} that keeps everything in this JVM's heap.
 *
 * <p>It protects one process (or several consumers inside one process) against duplicates for as long as the process
 * lives; a restart forgets everything, so a message redelivered across a restart is handled again. Use the JDBC store
 * when duplicates must be caught across restarts or across processes.
 *
 * <pre>{@code
 * LeasedIdempotencyStore store = InMemoryIdempotencyStore.builder()
 *         .lease(Duration.ofMinutes(1))
 *         .retention(Duration.ofHours(6))
 *         .build();
 * }</pre>
 *
 * <h2>Configuration and defaults</h2>
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>Setting</th><th>Default</th><th>Meaning</th></tr>
 *   <tr><td>{@code lease}</td><td>{@link #DEFAULT_LEASE} (30 s)</td><td>How long a claim lasts unless renewed.
 *       It must outlive the <em>normal</em> handler time; the runtime renews the lease while a long handler runs,
 *       so the lease only bounds how long a crashed consumer's message stays blocked as {@code IN_PROGRESS}.</td></tr>
 *   <tr><td>{@code retention}</td><td>{@link #DEFAULT_RETENTION} (24 h)</td><td>How long a confirmed identifier is
 *       remembered (and a released one keeps its attempt count). It must outlive the longest time a duplicate can
 *       still arrive: the broker's redelivery window plus the age of the oldest message a backlog can hold, plus
 *       the publisher's retry window. Must be at least the lease.</td></tr>
 *   <tr><td>{@code maxEntries}</td><td>{@link #DEFAULT_MAX_ENTRIES} (1,000,000)</td><td>The bound on remembered
 *       identifiers; {@link #UNBOUNDED} for none. See "Bounded memory".</td></tr>
 *   <tr><td>{@code expectedEntries}</td><td>0 (none)</td><td>How many identifiers to size the hash table for up
 *       front, at most {@code maxEntries}: below that many the table never grows, so no insert pays for a resize
 *       (copying every entry to a table twice the size) while the consumer runs. It costs the table's memory at
 *       once, 5 to 11 bytes per expected identifier with compressed oops (the table is the next power of two
 *       above {@code expectedEntries / 0.75}); the entries themselves are allocated as they come. Give it the number
 *       of identifiers a full retention holds (rate × retention) when that is known; without it the table starts
 *       small and doubles as it fills.</td></tr>
 *   <tr><td>{@code clock}</td><td>{@link Clock#systemUTC()}</td><td>The time leases and retention are measured
 *       with; tests inject a clock they can move.</td></tr>
 *   <tr><td>{@code owner}</td><td>a generated name</td><td>This instance's owner identity (see "Owners").</td></tr>
 * </table>
 * The configuration is immutable once built.
 *
 * <h2>Owners and peers</h2>
 * Every instance has an {@linkplain #owner() owner identity}: a release or renewal only acts on claims of the same
 * owner, and a {@link Claim}'s attempt number names one lease (see {@link LeasedIdempotencyStore} on fencing).
 * {@link #newPeer()} returns another instance over the <em>same</em> remembered state with a new owner, as if it were
 * a second consumer process sharing a database: use it to give independent consumers in one JVM their own owner
 * identities, and in tests to simulate a consumer that crashed and one that took over. Instances with the same owner
 * name over the same state are the same owner. One state holds at most 1,023 owners.
 *
 * <h2>Threading and blocking</h2>
 * All methods are safe for concurrent use by any number of threads, across all peers. Every update of one identifier
 * is one atomic step of the {@link java.util.concurrent.ConcurrentHashMap}: a {@code putIfAbsent} for a new identifier,
 * a {@code replace} of the very entry that was read for the common confirm and release of a live lease, and a
 * {@code compute} that decides on the current entry otherwise. So claims are atomic per identifier, operations on
 * different identifiers do not contend (beyond the map's bin locks), and the common path allocates only the new entry
 * and the returned {@link Claim}. The batch calls ({@link #acquireAll}, {@link #confirmAll}, {@link #releaseAll}) do
 * the same per identifier, in order. No method does I/O, and none
 * blocks except in two rare cases, both on the calling thread: about once per sweep interval (a quarter of the
 * retention, between 1 s and 10 min) one caller removes the forgotten entries in a pass over the map, and when a
 * bounded store is full one inserting caller evicts a batch (other inserting callers only wait for it if they would
 * go more than a batch over the bound). There is no background thread; forgotten entries are also dropped lazily
 * when they are read.
 *
 * <h2>Bounded memory</h2>
 * When {@code maxEntries} identifiers are remembered and a new one arrives, the store frees a batch of
 * {@code maxEntries / 16} slots (at least 1, at most 65,536): first identifiers whose retention has passed, then confirmed
 * identifiers, those closest to the end of their retention first (this shortens their retention, so a very late
 * duplicate of one is handled again), and only if that is not enough released identifiers and lapsed claims (whose
 * attempt counts are then lost). A live claim is never evicted. If every remembered identifier is a live claim,
 * {@link #acquire} and {@code confirm} of a new identifier throw {@link StoreUnavailableException}
 * ({@code "in-memory store is full: …"}); the runtime treats that as a store outage and returns the delivery to the
 * broker, so nothing is lost. The bound is soft: while one thread evicts (two passes over the map), other threads
 * keep inserting up to one batch over it instead of waiting, and a few more may slip in at the same instant.
 *
 * <p><b>Memory per identifier:</b> a remembered, confirmed 36-character UUID id costs about 145 bytes of heap on a
 * 64-bit JVM with compressed oops (measured on JDK 17 with 1,000,000 ids: 144.5 bytes with Parallel GC, 146 with G1):
 * about 65 bytes for the map node (32), its share of the hash table (~8) and this store's entry (24), plus 80 bytes
 * for the id {@code String} itself. A fingerprint (recorded by default, see {@link #acquire(String, String)}) adds 16
 * bytes for the runtime's 32-digit hexadecimal form, kept as two longs; the scope in front of every runtime key adds its
 * length. Measured by {@code org.acemq.amqp.benchmarks.store.InMemoryHeapPerId}, see
 * {@code docs/benchmarks-stores.md}. The default bound therefore caps the store at roughly 145 MB.
 *
 * <h2>Limits</h2>
 * Attempt counts saturate at 1,048,575 per identifier; past that count, leases of one identifier can no longer be
 * told apart by their attempt number. Times are kept in milliseconds; a lease below a millisecond rounds up.
 * The clock is trusted: if it jumps back, leases and retention last longer; if it jumps forward, they end sooner.
 */
public final class InMemoryIdempotencyStore implements LeasedIdempotencyStore {

    /** The default lease: 30 seconds, comfortably longer than a normal handler; the runtime renews longer ones. */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);

    /**
     * The default retention: 24 hours, longer than typical broker redelivery windows and queue backlogs. Shorten it
     * only when you know how late a duplicate can arrive.
     */
    public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);

    /**
     * The default bound: 1,000,000 identifiers, about 145 MB of heap with 36-character ids. That holds a full
     * default retention (24 h) of traffic up to about 11 messages per second, which covers the workloads an in-memory
     * store suits; beyond that, the oldest confirmations are evicted early rather than the heap growing until the
     * JVM fails. A bounded default is deliberate: an unbounded in-memory store turns a traffic spike into an
     * {@link OutOfMemoryError}. Raise it (and the heap) for higher rates, or use {@link #UNBOUNDED} if you bound the
     * traffic some other way.
     */
    public static final long DEFAULT_MAX_ENTRIES = 1_000_000L;

    /** The {@code maxEntries} value that means no bound. */
    public static final long UNBOUNDED = Long.MAX_VALUE;

    private final SharedState state;
    private final String owner;
    private final int ownerIndex;

    private InMemoryIdempotencyStore(SharedState state, String owner) {
        this.state = state;
        this.owner = owner;
        this.ownerIndex = state.owner(owner);
    }

    /** @return a builder with every setting at its default */
    public static Builder builder() {
        return new Builder();
    }

    /** @return a store with every setting at its default, over new empty state */
    public static InMemoryIdempotencyStore ofDefaults() {
        return builder().build();
    }

    /**
     * Creates another store over this one's remembered state, with the same configuration and a new, generated owner
     * identity.
     *
     * @return the peer
     * @throws IllegalStateException if the state already has 1,023 owners
     */
    public InMemoryIdempotencyStore newPeer() {
        return new InMemoryIdempotencyStore(state, state.newOwner());
    }

    /**
     * Creates another store over this one's remembered state, with the same configuration and the given owner
     * identity. A peer with this instance's own owner name is the same owner.
     *
     * @param owner the owner name, for example a consumer's name
     * @return the peer
     * @throws NullPointerException if {@code owner} is null
     * @throws IllegalArgumentException if {@code owner} is blank
     * @throws IllegalStateException if the state already has 1,023 owners
     */
    public InMemoryIdempotencyStore newPeer(String owner) {
        return new InMemoryIdempotencyStore(state, requireOwner(owner));
    }

    /** @return this instance's owner identity */
    public String owner() {
        return owner;
    }

    @Override
    public Duration leaseDuration() {
        return state.lease;
    }

    @Override
    public Duration retention() {
        return state.retention;
    }

    /** @return the bound on remembered identifiers, {@link #UNBOUNDED} for none */
    public long maxEntries() {
        return state.maxEntries;
    }

    /** @return how many identifiers the hash table was sized for when the store was built; 0 if not presized */
    public int expectedEntries() {
        return state.expectedEntries;
    }

    /** @return how many identifiers are held in memory now, including forgotten ones not yet swept */
    long size() {
        return state.entries.mappingCount();
    }

    // ------------------------------------------------------------------ IdempotencyStore

    @Override
    public boolean claim(String messageId) {
        return acquire(messageId).claimed();
    }

    @Override
    public ClaimResult tryClaim(String messageId) {
        return acquire(messageId).result();
    }

    @Override
    public void confirm(String messageId) {
        MessageIds.requireValid(messageId);
        long now = state.now();
        Entry entry = state.entries.get(messageId);
        if (entry != null && !state.forgotten(entry, now)) {
            // the common cases without a compute step: already confirmed (nothing to write), or a claim to confirm
            if (entry.isConfirmed() || state.entries.replace(messageId, entry, confirmed(entry, now))) {
                return;
            }
        }
        state.beforeInsert(messageId, now);
        state.entries.compute(messageId, (id, current) -> {
            if (current == null || state.forgotten(current, now)) {
                // a record past its retention is gone: confirming starts a new one (no attempts, no fingerprint)
                return confirmed(null, now);
            }
            return current.isConfirmed() ? current : confirmed(current, now);
        });
    }

    @Override
    public void release(String messageId) {
        MessageIds.requireValid(messageId);
        long now = state.now();
        state.entries.computeIfPresent(messageId, (id, entry) -> {
            if (state.forgotten(entry, now)) {
                return null;
            }
            return entry.isClaimed() && entry.owner() == ownerIndex ? released(entry, now) : entry;
        });
    }

    @Override
    public boolean isConfirmed(String messageId) {
        MessageIds.requireValid(messageId);
        Entry entry = current(messageId, state.now());
        return entry != null && entry.isConfirmed();
    }

    // ------------------------------------------------------------------ LeasedIdempotencyStore

    @Override
    public Claim acquire(String messageId) {
        return acquire(messageId, null);
    }

    /** {@inheritDoc} Here: recorded with the claim's entry, in the same atomic step. */
    @Override
    public Claim acquire(String messageId, String fingerprint) {
        MessageIds.requireValid(messageId);
        MessageIds.requireValidFingerprint(fingerprint);
        long now = state.now();
        state.beforeInsert(messageId, now);
        return acquireValid(messageId, fingerprint, now, null);
    }

    /** @return {@code true}: fingerprints are kept with each entry */
    @Override
    public boolean recordsFingerprints() {
        return true;
    }

    /**
     * One atomic acquire of a valid id: a new id is one {@code putIfAbsent}; an id the store knows goes through a
     * compute step that decides on the current entry. {@code step} may be reused across calls of one thread.
     */
    private Claim acquireValid(String messageId, String fingerprint, long now, Acquisition step) {
        if (state.entries.putIfAbsent(messageId, Entry.claimed(ownerIndex, 1, leaseEnd(now), fingerprint)) == null) {
            return new Claim(messageId, ClaimResult.CLAIMED, 1, fingerprint);
        }
        Acquisition acquisition = step != null ? step.at(now, fingerprint) : new Acquisition(now, fingerprint);
        state.entries.compute(messageId, acquisition);
        return new Claim(messageId, acquisition.result, acquisition.attempt, acquisition.held);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one atomic step per identifier, one after the other in the order given, so a duplicate inside the call
     * sees the claim its first copy took. Room for the new identifiers is made before any of them is written, so a
     * full store ({@link StoreUnavailableException}) refuses the call before it claims anything.
     */
    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        return acquireAll(messageIds, null);
    }

    /** {@inheritDoc} Here: as {@link #acquireAll(List)}, each fingerprint recorded in its identifier's step. */
    @Override
    public List<Claim> acquireAll(List<String> messageIds, List<String> fingerprints) {
        int n = messageIds.size();
        if (fingerprints != null && fingerprints.size() != n) {
            throw new IllegalArgumentException("one fingerprint per identifier: " + n + " identifiers, "
                    + fingerprints.size() + " fingerprints");
        }
        for (int i = 0; i < n; i++) {
            MessageIds.requireValid(messageIds.get(i));
            if (fingerprints != null) {
                MessageIds.requireValidFingerprint(fingerprints.get(i));
            }
        }
        if (n == 0) {
            return List.of();
        }
        long now = state.now();
        state.beforeInsert(n, messageIds::get, now);
        Claim[] claims = new Claim[n];
        Acquisition step = new Acquisition(now, null);
        for (int i = 0; i < n; i++) {
            claims[i] = acquireValid(messageIds.get(i), fingerprints == null ? null : fingerprints.get(i), now, step);
        }
        return Arrays.asList(claims);
    }

    @Override
    public boolean renew(Claim claim) {
        int attempt = requireLease(claim);
        long now = state.now();
        LeaseStep step = new LeaseStep(now, attempt) {
            @Override
            Entry onHeld(Entry entry) {
                return Entry.claimed(ownerIndex, attempt, leaseEnd(now), entry);
            }
        };
        state.entries.computeIfPresent(claim.messageId(), step);
        return step.held;
    }

    @Override
    public boolean confirm(Claim claim) {
        int attempt = requireLease(claim);
        long now = state.now();
        Boolean fast = confirmHeld(claim.messageId(), attempt, now);
        if (fast != null) {
            return fast;
        }
        state.beforeInsert(claim.messageId(), now);
        return confirmValid(claim.messageId(), attempt, now);
    }

    /** @return true if the live lease was confirmed without a compute step; null if the general step must decide */
    private Boolean confirmHeld(String messageId, int attempt, long now) {
        Entry entry = state.entries.get(messageId);
        if (entry != null && entry.isLease(ownerIndex, attempt) && entry.isLiveClaim(now)
                && state.entries.replace(messageId, entry, confirmed(entry, now))) {
            return Boolean.TRUE;
        }
        return null;
    }

    private boolean confirmValid(String messageId, int attempt, long now) {
        boolean[] live = new boolean[1];
        state.entries.compute(messageId, (id, entry) -> {
            if (entry != null && state.forgotten(entry, now)) {
                entry = null;
            }
            if (entry == null) {
                return confirmed(null, now);
            }
            live[0] = entry.isLease(ownerIndex, attempt) && entry.isLiveClaim(now);
            return entry.isConfirmed() ? entry : confirmed(entry, now);
        });
        return live[0];
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one atomic step per claim, in the order given. Room for identifiers the store no longer holds is made
     * before anything is written, so a full store refuses the call before it records any completion.
     */
    @Override
    public List<Claim> confirmAll(List<Claim> claims) {
        int n = claims.size();
        for (int i = 0; i < n; i++) {
            requireLease(claims.get(i));
        }
        if (n == 0) {
            return List.of();
        }
        long now = state.now();
        state.beforeInsert(n, i -> claims.get(i).messageId(), now);
        List<Claim> lost = null;
        for (int i = 0; i < n; i++) {
            Claim claim = claims.get(i);
            Boolean fast = confirmHeld(claim.messageId(), claim.attempt(), now);
            if (fast == null && !confirmValid(claim.messageId(), claim.attempt(), now)) {
                if (lost == null) {
                    lost = new ArrayList<>();
                }
                lost.add(claim);
            }
        }
        return lost == null ? List.of() : lost;
    }

    @Override
    public boolean release(Claim claim) {
        return releaseValid(claim.messageId(), requireLease(claim), state.now());
    }

    private boolean releaseValid(String messageId, int attempt, long now) {
        Entry entry = state.entries.get(messageId);
        if (entry == null) {
            return false;
        }
        if (entry.isLease(ownerIndex, attempt) && !state.forgotten(entry, now)
                && state.entries.replace(messageId, entry, released(entry, now))) {
            return true;
        }
        LeaseStep step = new LeaseStep(now, attempt) {
            @Override
            Entry onHeld(Entry held) {
                return released(held, now);
            }
        };
        state.entries.computeIfPresent(messageId, step);
        return step.held;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one atomic step per claim, in the order given; claims that are not {@code CLAIMED} are skipped.
     */
    @Override
    public void releaseAll(List<Claim> claims) {
        int n = claims.size();
        for (int i = 0; i < n; i++) {
            Claim claim = Objects.requireNonNull(claims.get(i), "claim must not be null");
            MessageIds.requireValid(claim.messageId());
        }
        long now = state.now();
        for (int i = 0; i < n; i++) {
            Claim claim = claims.get(i);
            if (claim.claimed()) {
                releaseValid(claim.messageId(), claim.attempt(), now);
            }
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: the identifier's entry is removed in one atomic step if it is released or its lease has lapsed.
     */
    @Override
    public boolean resetAttempts(String messageId) {
        MessageIds.requireValid(messageId);
        long now = state.now();
        boolean[] reset = new boolean[1];
        state.entries.computeIfPresent(messageId, (id, entry) -> {
            if (state.forgotten(entry, now)) {
                return null;
            }
            if (entry.isConfirmed() || entry.isLiveClaim(now)) {
                return entry;
            }
            reset[0] = true;
            return null;
        });
        return reset[0];
    }

    @Override
    public int attempts(String messageId) {
        MessageIds.requireValid(messageId);
        Entry entry = current(messageId, state.now());
        return entry == null ? 0 : entry.attempt();
    }

    @Override
    public String toString() {
        return "InMemoryIdempotencyStore[owner=" + owner + ", lease=" + state.lease + ", retention=" + state.retention
                + ", maxEntries=" + (state.maxEntries == UNBOUNDED ? "unbounded" : state.maxEntries)
                + ", entries=" + size() + "]";
    }

    // ------------------------------------------------------------------ internals

    /** @return the entry if it is remembered at {@code now}; drops it if it is forgotten */
    private Entry current(String messageId, long now) {
        Entry entry = state.entries.get(messageId);
        if (entry != null && state.forgotten(entry, now)) {
            state.entries.remove(messageId, entry);
            return null;
        }
        return entry;
    }

    private long leaseEnd(long now) {
        return SharedState.plus(now, state.leaseMillis);
    }

    private Entry confirmed(Entry previous, long now) {
        return Entry.confirmed(previous == null ? 0 : previous.attempt(), SharedState.plus(now, state.retentionMillis),
                previous);
    }

    private Entry released(Entry claimed, long now) {
        // a lapsed lease has been idle since it ended, so its attempt count is kept no longer than that would be
        long idleSince = Math.min(now, claimed.deadline);
        return Entry.released(claimed.attempt(), SharedState.plus(idleSince, state.retentionMillis),
                claimed);
    }

    private static int requireLease(Claim claim) {
        Objects.requireNonNull(claim, "claim must not be null");
        MessageIds.requireValid(claim.messageId());
        if (!claim.claimed()) {
            throw new IllegalArgumentException("claim must be a CLAIMED claim from acquire, but was " + claim.result());
        }
        return claim.attempt();
    }

    private static String requireOwner(String owner) {
        Objects.requireNonNull(owner, "owner must not be null");
        if (owner.isBlank()) {
            throw new IllegalArgumentException("owner must not be blank, but was '" + owner + "'");
        }
        return owner;
    }

    /** One atomic acquire: decides the result inside the map's compute step and reports it. */
    private final class Acquisition implements BiFunction<String, Entry, Entry> {
        private long now;
        private String fingerprint;
        ClaimResult result;
        int attempt;
        /** The fingerprint the entry holds after the step. */
        String held;

        Acquisition(long now, String fingerprint) {
            this.now = now;
            this.fingerprint = fingerprint;
        }

        /** @return this step, ready for another compute at {@code time} (the caller's thread only) */
        Acquisition at(long time, String print) {
            this.now = time;
            this.fingerprint = print;
            this.result = null;
            this.attempt = 0;
            this.held = null;
            return this;
        }

        @Override
        public Entry apply(String id, Entry entry) {
            if (entry == null || state.forgotten(entry, now)) {
                return grant(1);
            }
            if (entry.isConfirmed()) {
                result = ClaimResult.ALREADY_CONFIRMED;
                attempt = entry.attempt();
                held = entry.fingerprint();
                return entry;
            }
            if (entry.isLiveClaim(now)) {
                result = ClaimResult.IN_PROGRESS;
                attempt = entry.attempt();
                held = entry.fingerprint();
                return entry;
            }
            return grant(Entry.next(entry.attempt())); // released, or a lapsed lease taken over
        }

        private Entry grant(int attemptNumber) {
            result = IdempotencyStore.ClaimResult.CLAIMED;
            attempt = attemptNumber;
            held = fingerprint;
            return Entry.claimed(ownerIndex, attemptNumber, leaseEnd(now), fingerprint);
        }
    }

    /** A step that acts only on this owner's lease {@code attempt}, live or lapsed-but-not-taken-over. */
    private abstract class LeaseStep implements BiFunction<String, Entry, Entry> {
        final long now;
        final int attempt;
        boolean held;

        LeaseStep(long now, int attempt) {
            this.now = now;
            this.attempt = attempt;
        }

        abstract Entry onHeld(Entry entry);

        @Override
        public Entry apply(String id, Entry entry) {
            if (state.forgotten(entry, now)) {
                return null;
            }
            if (!entry.isLease(ownerIndex, attempt)) {
                return entry;
            }
            held = true;
            return onHeld(entry);
        }
    }

    /**
     * Builds an {@link InMemoryIdempotencyStore}. Each setter validates its value at once; {@link #build()} checks
     * the settings against each other. Not thread-safe; a builder may build several independent stores.
     */
    public static final class Builder {

        private Duration lease = DEFAULT_LEASE;
        private Duration retention = DEFAULT_RETENTION;
        private long maxEntries = DEFAULT_MAX_ENTRIES;
        private int expectedEntries;
        private Clock clock = Clock.systemUTC();
        private String owner;

        private Builder() {
        }

        /**
         * @param lease how long a claim lasts unless renewed; default {@link #DEFAULT_LEASE}
         * @return this builder
         * @throws IllegalArgumentException if not positive
         */
        public Builder lease(Duration lease) {
            this.lease = requirePositive("lease", lease);
            return this;
        }

        /**
         * @param retention how long a confirmed identifier is remembered; default {@link #DEFAULT_RETENTION}
         * @return this builder
         * @throws IllegalArgumentException if not positive
         */
        public Builder retention(Duration retention) {
            this.retention = requirePositive("retention", retention);
            return this;
        }

        /**
         * @param maxEntries the bound on remembered identifiers; {@link #UNBOUNDED} for none; default
         *     {@link #DEFAULT_MAX_ENTRIES}
         * @return this builder
         * @throws IllegalArgumentException if below 1
         */
        public Builder maxEntries(long maxEntries) {
            if (maxEntries < 1) {
                throw new IllegalArgumentException("maxEntries must be >= 1, but was " + maxEntries);
            }
            this.maxEntries = maxEntries;
            return this;
        }

        /**
         * Sizes the store's hash table up front for {@code expectedEntries} identifiers, so that it does not grow
         * (no resize, no copying of entries) until it holds more than that many. The table's memory (5 to 11 bytes per
         * expected identifier) is taken at once; entries are still allocated as they arrive. A hint only: the store
         * holds more or fewer identifiers just the same.
         *
         * @param expectedEntries how many identifiers to size for; 0 (the default) for no presizing; at most
         *     {@code maxEntries} (checked by {@link #build()})
         * @return this builder
         * @throws IllegalArgumentException if negative
         */
        public Builder expectedEntries(int expectedEntries) {
            if (expectedEntries < 0) {
                throw new IllegalArgumentException("expectedEntries must be >= 0, but was " + expectedEntries);
            }
            this.expectedEntries = expectedEntries;
            return this;
        }

        /**
         * @param clock the time source for leases and retention; default {@link Clock#systemUTC()}
         * @return this builder
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock must not be null");
            return this;
        }

        /**
         * @param owner this store's owner identity, or null for a generated one (the default)
         * @return this builder
         * @throws IllegalArgumentException if blank
         */
        public Builder owner(String owner) {
            this.owner = owner == null ? null : requireOwner(owner);
            return this;
        }

        /**
         * @return a new store over new, empty state
         * @throws IllegalArgumentException if the retention is shorter than the lease, or {@code expectedEntries} is
         *     above {@code maxEntries}
         */
        public InMemoryIdempotencyStore build() {
            if (retention.compareTo(lease) < 0) {
                throw new IllegalArgumentException("retention must be >= lease (" + lease + "), but was " + retention);
            }
            if (expectedEntries > maxEntries) {
                throw new IllegalArgumentException("expectedEntries must be <= maxEntries (" + maxEntries
                        + "), but was " + expectedEntries);
            }
            SharedState state = new SharedState(lease, retention, maxEntries, expectedEntries, clock);
            return new InMemoryIdempotencyStore(state, owner != null ? owner : state.newOwner());
        }

        private static Duration requirePositive(String name, Duration value) {
            Objects.requireNonNull(value, name + " must not be null");
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(name + " must be > 0, but was " + value);
            }
            return value;
        }
    }
}

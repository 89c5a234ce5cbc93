package org.acemq.amqp.store.inmemory;

import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;

import org.acemq.amqp.api.StoreUnavailableException;

/**
 * The state and configuration every peer of one in-memory store shares: the entry map, the owner registry, the
 * clock, and the sweep and eviction machinery.
 */
final class SharedState {

    /** Largest sample of deadlines sorted to estimate the eviction cutoff. */
    private static final int CUTOFF_SAMPLE = 8192;

    final ConcurrentHashMap<String, Entry> entries;
    final Duration lease;
    final Duration retention;
    final long leaseMillis;
    final long retentionMillis;
    final long maxEntries;
    final int expectedEntries;
    final Clock clock;

    private final ConcurrentHashMap<String, Integer> owners = new ConcurrentHashMap<>();
    private final AtomicLong generatedOwners = new AtomicLong();
    private final Object ownerLock = new Object();
    private int nextOwnerIndex = 1;

    private final long sweepIntervalMillis;
    private final AtomicLong nextSweepAt;
    private final ReentrantLock evictionLock = new ReentrantLock();
    /** How many slots one eviction frees: maxEntries / 16, at least 1, at most 65,536. */
    private final long batch;

    /**
     * @param expectedEntries how many identifiers the map is sized for up front (it does not grow below that many);
     *     0 for the map's own small default
     */
    SharedState(Duration lease, Duration retention, long maxEntries, int expectedEntries, Clock clock) {
        // ConcurrentHashMap(n) picks a table whose resize threshold is above n, so n entries never resize it
        this.entries = expectedEntries > 0 ? new ConcurrentHashMap<>(expectedEntries) : new ConcurrentHashMap<>();
        this.expectedEntries = expectedEntries;
        this.lease = lease;
        this.retention = retention;
        this.leaseMillis = ceilMillis(lease);
        this.retentionMillis = ceilMillis(retention);
        this.maxEntries = maxEntries;
        this.clock = clock;
        this.batch = Math.max(1, Math.min(maxEntries / 16, 1L << 16));
        // Nothing can be forgotten sooner than one retention after its last change, so sweeping more often than a
        // fraction of it finds little; the cap bounds how long forgotten entries linger with a long retention.
        this.sweepIntervalMillis = Math.max(1_000L, Math.min(retentionMillis / 4, Duration.ofMinutes(10).toMillis()));
        this.nextSweepAt = new AtomicLong(clock.millis() + sweepIntervalMillis);
    }

    private static long ceilMillis(Duration duration) {
        try {
            long millis = duration.toMillis();
            return duration.equals(Duration.ofMillis(millis)) ? millis : millis + 1;
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }

    static long plus(long time, long millis) {
        long sum = time + millis;
        return ((time ^ sum) & (millis ^ sum)) < 0 ? Long.MAX_VALUE : sum;
    }

    long now() {
        return clock.millis();
    }

    // ------------------------------------------------------------------ owners

    /** @return the index of {@code name}, registering it if new */
    int owner(String name) {
        Integer index = owners.get(name);
        return index != null ? index : register(name, false);
    }

    /** @return the name of a newly registered owner nobody used before */
    String newOwner() {
        while (true) {
            String name = "in-memory-owner-" + generatedOwners.incrementAndGet();
            if (register(name, true) > 0) {
                return name;
            }
        }
    }

    /** @return the index, or 0 if {@code mustBeNew} and the name was taken */
    private int register(String name, boolean mustBeNew) {
        synchronized (ownerLock) {
            Integer existing = owners.get(name);
            if (existing != null) {
                return mustBeNew ? 0 : existing;
            }
            if (nextOwnerIndex > Entry.MAX_OWNER) {
                throw new IllegalStateException("owners of one in-memory store must be at most " + Entry.MAX_OWNER
                        + ", but " + name + " would be owner number " + nextOwnerIndex);
            }
            int index = nextOwnerIndex++;
            owners.put(name, index);
            return index;
        }
    }

    // ------------------------------------------------------------------ forgetting

    /** @return when {@code entry} is forgotten */
    long forgetAt(Entry entry) {
        return entry.isClaimed() ? plus(entry.deadline, retentionMillis) : entry.deadline;
    }

    boolean forgotten(Entry entry, long now) {
        return now >= forgetAt(entry);
    }

    /**
     * Runs before every operation that may add an identifier: an occasional sweep of forgotten entries, and room
     * for a new one when the store is bounded and full.
     */
    void beforeInsert(String messageId, long now) {
        long sweepAt = nextSweepAt.get();
        if (now >= sweepAt && nextSweepAt.compareAndSet(sweepAt, plus(now, sweepIntervalMillis))) {
            sweep(now);
        }
        if (maxEntries != InMemoryIdempotencyStore.UNBOUNDED && entries.mappingCount() >= maxEntries
                && !entries.containsKey(messageId)) {
            makeRoom(now);
        }
    }

    /**
     * Runs before a batch operation that may add the identifiers {@code idAt(0 .. count - 1)}: as
     * {@link #beforeInsert(String, long)}, with room made when those of them that are not remembered yet could take
     * the store over its bound (identifiers it holds need no room, so a batch of confirms of live claims never fails
     * for a store full of live claims). It throws (the store is full of live claims) before anything of the batch is
     * written.
     */
    void beforeInsert(int count, IntFunction<String> idAt, long now) {
        long sweepAt = nextSweepAt.get();
        if (now >= sweepAt && nextSweepAt.compareAndSet(sweepAt, plus(now, sweepIntervalMillis))) {
            sweep(now);
        }
        if (maxEntries == InMemoryIdempotencyStore.UNBOUNDED || entries.mappingCount() + count <= maxEntries) {
            return;
        }
        int fresh = 0;
        for (int i = 0; i < count; i++) {
            if (!entries.containsKey(idAt.apply(i))) {
                fresh++;
            }
        }
        if (fresh > 0 && entries.mappingCount() + fresh > maxEntries) {
            makeRoom(now);
        }
    }

    /** Removes every forgotten entry; runs on the calling thread. @return how many were removed */
    long sweep(long now) {
        long removed = 0;
        for (Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Entry> e = it.next();
            if (forgotten(e.getValue(), now) && entries.remove(e.getKey(), e.getValue())) {
                removed++;
            }
        }
        return removed;
    }

    /**
     * Frees a batch of slots: first forgotten entries, then confirmed ones (earliest to be forgotten first), then,
     * only if that is not enough, released and lapsed ones, whose attempt counts are lost with them. Live claims are
     * never evicted. Frees a batch rather than one slot so that the O(n) passes are paid once per batch of inserts,
     * and lets other inserting threads go on (up to one batch over the bound) while one thread evicts.
     */
    private void makeRoom(long now) {
        if (!evictionLock.tryLock()) {
            if (entries.mappingCount() < plus(maxEntries, batch)) {
                return;
            }
            evictionLock.lock();
        }
        try {
            if (entries.mappingCount() < maxEntries) {
                return;
            }
            Candidates confirmed = new Candidates(entries.mappingCount());
            Candidates idle = new Candidates(entries.mappingCount());
            long freed = 0;
            for (Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, Entry> e = it.next();
                Entry entry = e.getValue();
                if (forgotten(entry, now)) {
                    freed += entries.remove(e.getKey(), entry) ? 1 : 0;
                } else if (entry.isConfirmed()) {
                    confirmed.add(entry.deadline);
                } else if (!entry.isLiveClaim(now)) {
                    idle.add(forgetAt(entry));
                }
            }
            long need = entries.mappingCount() - (maxEntries - batch);
            if (need > 0) {
                long evicted = evict(now, true, confirmed, need);
                if (evicted < need) {
                    evicted += evict(now, false, idle, need - evicted);
                }
                freed += evicted;
            }
            if (freed == 0 && entries.mappingCount() >= maxEntries) {
                throw new StoreUnavailableException("in-memory store is full: all " + entries.mappingCount()
                        + " entries are live claims, which are never evicted (maxEntries=" + maxEntries
                        + "); raise maxEntries or shorten the lease");
            }
        } finally {
            evictionLock.unlock();
        }
    }

    /** Counts the eviction candidates of one kind and keeps an evenly spread sample of their forget times. */
    private static final class Candidates {
        private final long stride;
        private long[] sample = new long[64];
        private int sampled;
        private long count;

        Candidates(long expected) {
            this.stride = Math.max(1, expected / CUTOFF_SAMPLE);
        }

        void add(long forgetAt) {
            if (count++ % stride == 0) {
                if (sampled == sample.length) {
                    sample = Arrays.copyOf(sample, sampled * 2);
                }
                sample[sampled++] = forgetAt;
            }
        }

        /** @return a forget time such that about {@code need} candidates are forgotten no later */
        long cutoff(long need) {
            Arrays.sort(sample, 0, sampled);
            double fraction = Math.min(1.0, (double) need / count);
            return sample[(int) Math.min(sampled - 1, Math.ceil(fraction * sampled))];
        }
    }

    /**
     * Evicts up to {@code need} confirmed (or idle) entries, roughly those forgotten soonest: one pass up to the
     * estimated cutoff, and a second taking any candidate if the estimate fell short.
     */
    private long evict(long now, boolean confirmedKind, Candidates candidates, long need) {
        if (candidates.count == 0) {
            return 0;
        }
        long evicted = evictPass(now, confirmedKind, candidates.cutoff(need), need);
        if (evicted < need) {
            evicted += evictPass(now, confirmedKind, Long.MAX_VALUE, need - evicted);
        }
        return evicted;
    }

    private long evictPass(long now, boolean confirmedKind, long cutoff, long need) {
        long evicted = 0;
        for (Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator(); it.hasNext() && evicted < need; ) {
            Map.Entry<String, Entry> e = it.next();
            Entry entry = e.getValue();
            boolean candidate = confirmedKind ? entry.isConfirmed() : !entry.isConfirmed() && !entry.isLiveClaim(now);
            if (candidate && forgetAt(entry) <= cutoff && entries.remove(e.getKey(), entry)) {
                evicted++;
            }
        }
        return evicted;
    }
}

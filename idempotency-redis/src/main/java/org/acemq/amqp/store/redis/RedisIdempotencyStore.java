package org.acemq.amqp.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.LeasedIdempotencyStore;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.api.StoreUnavailableException;
import org.acemq.amqp.store.redis.internal.KeyLayout;
import org.acemq.amqp.store.redis.internal.LayoutMigration;
import org.acemq.amqp.store.redis.internal.RedisScript;
import org.acemq.amqp.store.redis.internal.ScriptRunner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.codec.StringCodec;

/**
 * A {@link LeasedIdempotencyStore} on Redis, standalone or Redis Cluster, through Lettuce.
 *
 * <pre>{@code
 * RedisClient client = RedisClient.create("redis://redis.example:6379");
 * RedisIdempotencyStore store = RedisIdempotencyStore.builder(client)
 *         .lease(Duration.ofSeconds(30))
 *         .retention(Duration.ofHours(24))
 *         .build();
 * // ... AmqpConsumer.builder()...store(store)...
 * store.close();      // closes the store's connection, not the client
 * client.shutdown();
 * }</pre>
 *
 * <h2>How it keeps state</h2>
 * One Redis hash per identifier, at the key {@code <keyPrefix>v2{<tag>}<identifier>} ({@link #redisKey}): its state
 * (claimed, released, confirmed), owner, attempt count, lease end, the time it is forgotten, and the fingerprint. Every operation on an
 * identifier is one Lua script (EVALSHA, EVAL when the server has not cached it yet), so it is atomic per identifier;
 * the batch calls run one script over many identifiers, one after the other, exactly as the single calls would.
 * Leases and retention are measured with the Redis server's clock ({@code TIME} inside the scripts), never the
 * consumers' clocks. A record carries a {@code PEXPIREAT} at the time it is forgotten (retention after confirmation,
 * retention after the lease ended for a claim, retention after going idle for a released identifier), so Redis itself
 * drops old records; the scripts also treat a record past that time as absent.
 *
 * <h2>Cluster</h2>
 * The part in braces is the key's hash tag: one of three per scope (the identifier's part before {@code |}), chosen by
 * a hash of the identifier, and the three sit a third of the slot range apart, so one queue's records spread over the
 * masters of an evenly split three-master cluster while a batch of its identifiers touches at most three slots. Every
 * record is one key in one slot: what must be atomic is always on one master. A batch call on a cluster is split by
 * slot: one script per slot (all sent at once and awaited together within one timeout), atomic within its slot. On a
 * standalone server a batch is one script, atomic as a whole. If some slots of a cluster batch fail,
 * {@link #acquireAll} gives back what the others claimed (taken back without counting an attempt) and throws
 * {@link StoreUnavailableException};
 * {@link #confirmAll} then leaves what did get confirmed confirmed (safe: confirming is idempotent, and the runtime
 * confirms again).
 *
 * <h2>Key layout</h2>
 * The layout is version 2 and marked per prefix at {@code <keyPrefix>layout}. Records of the first layout
 * ({@code <keyPrefix>{<identifier>}}) are moved by the first {@link Builder#build()} on the prefix; see there.
 *
 * <h2>What Redis can lose</h2>
 * Redis acknowledges a write before it reaches a replica or (unless {@code appendfsync always}) the disk. A failover to
 * a replica that had not received the last writes, or a restart without them, makes the store forget those claims,
 * confirmations and attempt counts. Forgetting never loses a message: a forgotten confirmation lets a later copy of
 * that message run again (a duplicate), a forgotten claim lets a second consumer run it concurrently, and a forgotten
 * attempt lets a crash-looping message have more attempts than configured. A claim's owner and attempt still fence it
 * (the new holder's lease is another owner's), so the first holder cannot release or renew the new holder's lease.
 * {@code docs/redis-store.md} sets out the bound for each configuration.
 *
 * <h2>Errors</h2>
 * Every identifier valid for {@link MessageIds#requireValid} is storable (Redis keys are binary-safe), so the store
 * refuses nothing beyond that check. No answer within the {@linkplain Builder#timeout timeout}, a connection failure or
 * a Redis error reply (a cluster that is down, a read-only replica, out of memory) is a
 * {@link StoreUnavailableException}, which pauses the consumer until the store answers again.
 *
 * <p><b>Threading:</b> safe for concurrent use. The store uses one Lettuce connection (Lettuce multiplexes it across
 * threads); every method blocks until Redis answers or the timeout passes.
 */
public final class RedisIdempotencyStore implements LeasedIdempotencyStore, AutoCloseable {

    /** The default lease: 30 seconds. */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    /** The default retention: 24 hours. */
    public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
    /** The default key prefix. */
    public static final String DEFAULT_KEY_PREFIX = "acemq:idempotency:";
    /** The default time to wait for an answer: 5 seconds. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    private static final Logger LOG = LoggerFactory.getLogger(RedisIdempotencyStore.class);

    private static final int CLAIMED = 1;
    private static final int CONFIRMED = 2;
    private static final int IN_PROGRESS = 3;

    private final ScriptRunner runner;
    private final String keyPrefix;
    private final KeyLayout layout;
    private final Duration lease;
    private final Duration retention;
    private final String leaseMillis;
    private final String retentionMillis;
    private final String owner;

    private RedisIdempotencyStore(Builder builder, ScriptRunner runner, KeyLayout layout) {
        this.runner = runner;
        this.keyPrefix = builder.keyPrefix;
        this.layout = layout;
        this.lease = builder.lease;
        this.retention = builder.retention;
        this.leaseMillis = Long.toString(Math.max(1, ceilMillis(builder.lease)));
        this.retentionMillis = Long.toString(Math.max(1, ceilMillis(builder.retention)));
        this.owner = builder.owner != null ? builder.owner : generatedOwner();
    }

    /**
     * A builder for a store on a standalone Redis server (or one that Redis Sentinel manages), reached through
     * {@code client}. The store opens its own connection from the client when built.
     *
     * @param client the client; the application keeps it and shuts it down after closing the store
     * @return a builder with every other setting at its default
     */
    public static Builder builder(RedisClient client) {
        return new Builder(Objects.requireNonNull(client, "client must not be null"), null);
    }

    /**
     * A builder for a store on a Redis Cluster, reached through {@code client}. Give the client topology refresh
     * (periodic and adaptive) so that a failover is followed; see {@code docs/redis-store.md}.
     *
     * @param client the cluster client; the application keeps it and shuts it down after closing the store
     * @return a builder with every other setting at its default
     */
    public static Builder builder(RedisClusterClient client) {
        return new Builder(null, Objects.requireNonNull(client, "client must not be null"));
    }

    /** @return this instance's owner identity */
    public String owner() {
        return owner;
    }

    /** @return the prefix of every key this store writes */
    public String keyPrefix() {
        return keyPrefix;
    }

    /** @return whether this store runs on a Redis Cluster */
    public boolean isCluster() {
        return runner.isCluster();
    }

    /**
     * The Redis key of an identifier's record: {@code <keyPrefix>v2{<tag>}<identifier>}, where the hash tag
     * {@code <tag>} is one of three per scope (chosen by a hash of the identifier); see {@code docs/redis-store.md}.
     *
     * @param messageId the identifier
     * @return the key
     * @throws IllegalArgumentException if the identifier is not valid ({@link MessageIds#requireValid})
     */
    public String redisKey(String messageId) {
        return layout.key(MessageIds.requireValid(messageId));
    }

    private String key(String messageId) {
        return layout.key(messageId);
    }

    @Override
    public Duration leaseDuration() {
        return lease;
    }

    @Override
    public Duration retention() {
        return retention;
    }

    /** @return {@code true}: each record keeps the fingerprint of the claim that wrote it */
    @Override
    public boolean recordsFingerprints() {
        return true;
    }

    // ------------------------------------------------------------------ IdempotencyStore

    @Override
    public boolean claim(String messageId) {
        return acquire(messageId).claimed();
    }

    @Override
    public IdempotencyStore.ClaimResult tryClaim(String messageId) {
        return acquire(messageId).result();
    }

    @Override
    public void confirm(String messageId) {
        MessageIds.requireValid(messageId);
        runner.run(RedisScript.CONFIRM, new String[] {key(messageId)}, "", retentionMillis, "0");
    }

    /** {@inheritDoc} Here: releases this owner's claim on the identifier, whatever its attempt. */
    @Override
    public void release(String messageId) {
        MessageIds.requireValid(messageId);
        runner.run(RedisScript.RELEASE, new String[] {key(messageId)}, owner, retentionMillis, "");
    }

    @Override
    public boolean isConfirmed(String messageId) {
        MessageIds.requireValid(messageId);
        return number(read(messageId).get(0)) == CONFIRMED;
    }

    // ------------------------------------------------------------------ LeasedIdempotencyStore

    @Override
    public Claim acquire(String messageId) {
        return acquire(messageId, null);
    }

    @Override
    public Claim acquire(String messageId, String fingerprint) {
        MessageIds.requireValid(messageId);
        MessageIds.requireValidFingerprint(fingerprint);
        List<Object> reply = runner.run(RedisScript.ACQUIRE, new String[] {key(messageId)}, owner, leaseMillis,
                retentionMillis, fingerprint == null ? "" : fingerprint);
        return claim(messageId, reply.get(0), reply.get(1), reply.get(2));
    }

    @Override
    public List<Claim> acquireAll(List<String> messageIds) {
        return acquireAll(messageIds, null);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one script on a standalone server; one script per hash slot on a cluster. If a slot's script fails on a
     * cluster, the claims the other slots took are given back before {@link StoreUnavailableException} is thrown: each
     * key is left as that call found it as far as its attempt count goes (a claim nothing ran under is no attempt), and
     * becomes claimable at once. Best effort: a claim that cannot be given back lapses with its lease, and then counts.
     */
    @Override
    public List<Claim> acquireAll(List<String> messageIds, List<String> fingerprints) {
        int n = messageIds.size();
        if (fingerprints != null && fingerprints.size() != n) {
            throw new IllegalArgumentException("one fingerprint per identifier: " + n + " identifiers, "
                    + fingerprints.size() + " fingerprints");
        }
        List<String> keys = new ArrayList<>(n);
        List<String> prints = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String id = MessageIds.requireValid(messageIds.get(i));
            String print = fingerprints == null ? null : MessageIds.requireValidFingerprint(fingerprints.get(i));
            keys.add(key(id));
            prints.add(print == null ? "" : print);
        }
        if (n == 0) {
            return List.of();
        }
        Object[] replies;
        try {
            replies = runner.perSlot(RedisScript.ACQUIRE, keys, List.of(owner, leaseMillis, retentionMillis), prints,
                    1, 3);
        } catch (ScriptRunner.PartialBatchException e) {
            giveBack(messageIds, e);
            throw plain(e);
        }
        Claim[] claims = new Claim[n];
        for (int i = 0; i < n; i++) {
            claims[i] = claim(messageIds.get(i), replies[3 * i], replies[3 * i + 1], replies[3 * i + 2]);
        }
        return Arrays.asList(claims);
    }

    /** @return the failure of a batch as the plain exception callers know, without the internal type */
    private static StoreUnavailableException plain(ScriptRunner.PartialBatchException partial) {
        StoreUnavailableException plain = new StoreUnavailableException(partial.getMessage(), partial.getCause());
        for (Throwable suppressed : partial.getSuppressed()) {
            plain.addSuppressed(suppressed);
        }
        return plain;
    }

    private void giveBack(List<String> messageIds, ScriptRunner.PartialBatchException failure) {
        Object[] replies = failure.replies();
        List<Claim> taken = new ArrayList<>();
        for (int i = 0; i < messageIds.size(); i++) {
            if (replies[3 * i] != null && number(replies[3 * i]) == CLAIMED) {
                taken.add(new Claim(messageIds.get(i), ClaimResult.CLAIMED, (int) number(replies[3 * i + 1])));
            }
        }
        try {
            // taken back, not released: nothing ran under these claims, so they must not count as attempts (a master
            // that stays down would otherwise fail every batch and drive the live keys' counts to maxAttempts)
            onClaims(RedisScript.UNCLAIM, taken);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
            LOG.debug("could not give back {} claims of a failed batch; their leases lapse", taken.size(), e);
        }
    }

    @Override
    public boolean renew(Claim claim) {
        int attempt = requireLease(claim);
        List<Object> reply = runner.run(RedisScript.RENEW, new String[] {key(claim.messageId())}, owner,
                Integer.toString(attempt), leaseMillis, retentionMillis);
        return number(reply.get(0)) == 1;
    }

    @Override
    public boolean confirm(Claim claim) {
        int attempt = requireLease(claim);
        List<Object> reply = runner.run(RedisScript.CONFIRM, new String[] {key(claim.messageId())}, owner,
                retentionMillis, Integer.toString(attempt));
        return number(reply.get(0)) == 1;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Here: one script on a standalone server (all or nothing); one per hash slot on a cluster, where a failure
     * leaves the slots that answered confirmed.
     */
    @Override
    public List<Claim> confirmAll(List<Claim> claims) {
        int n = claims.size();
        List<String> keys = new ArrayList<>(n);
        List<String> attempts = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Claim claim = claims.get(i);
            attempts.add(Integer.toString(requireLease(claim)));
            keys.add(key(claim.messageId()));
        }
        if (n == 0) {
            return List.of();
        }
        Object[] replies;
        try {
            replies = runner.perSlot(RedisScript.CONFIRM, keys, List.of(owner, retentionMillis), attempts, 1, 1);
        } catch (ScriptRunner.PartialBatchException e) {
            throw plain(e);
        }
        List<Claim> lost = null;
        for (int i = 0; i < n; i++) {
            if (number(replies[i]) != 1) {
                if (lost == null) {
                    lost = new ArrayList<>();
                }
                lost.add(claims.get(i));
            }
        }
        return lost == null ? List.of() : lost;
    }

    @Override
    public boolean release(Claim claim) {
        int attempt = requireLease(claim);
        List<Object> reply = runner.run(RedisScript.RELEASE, new String[] {key(claim.messageId())}, owner,
                retentionMillis, Integer.toString(attempt));
        return number(reply.get(0)) == 1;
    }

    @Override
    public void releaseAll(List<Claim> claims) {
        for (Claim claim : claims) {
            Objects.requireNonNull(claim, "claim must not be null");
            MessageIds.requireValid(claim.messageId());
        }
        try {
            onClaims(RedisScript.RELEASE, claims);
        } catch (ScriptRunner.PartialBatchException e) {
            throw plain(e);
        }
    }

    /**
     * Runs a script fenced per claim (owner, then retention; per key the claim's attempt: release.lua, unclaim.lua) on
     * the claimed ones among {@code claims}, one script per slot.
     */
    private void onClaims(RedisScript script, List<Claim> claims) {
        List<String> keys = new ArrayList<>(claims.size());
        List<String> attempts = new ArrayList<>(claims.size());
        for (Claim claim : claims) {
            if (claim.claimed()) {
                keys.add(key(claim.messageId()));
                attempts.add(Integer.toString(claim.attempt()));
            }
        }
        if (!keys.isEmpty()) {
            runner.perSlot(script, keys, List.of(owner, retentionMillis), attempts, 1, 1);
        }
    }

    /** {@inheritDoc} Here: the record is deleted in one script if it is released or its lease has lapsed. */
    @Override
    public boolean resetAttempts(String messageId) {
        MessageIds.requireValid(messageId);
        return number(runner.run(RedisScript.RESET, new String[] {key(messageId)}).get(0)) == 1;
    }

    @Override
    public int attempts(String messageId) {
        MessageIds.requireValid(messageId);
        return (int) number(read(messageId).get(1));
    }

    /** Closes the store's connection (not the client it came from). Idempotent. */
    @Override
    public void close() {
        runner.close();
    }

    @Override
    public String toString() {
        return "RedisIdempotencyStore[owner=" + owner + ", " + (runner.isCluster() ? "cluster" : "standalone")
                + ", keyPrefix=" + keyPrefix + ", lease=" + lease + ", retention=" + retention + "]";
    }

    // ------------------------------------------------------------------ internals

    private List<Object> read(String messageId) {
        return runner.run(RedisScript.READ, new String[] {key(messageId)});
    }

    private static Claim claim(String messageId, Object result, Object attempt, Object fingerprint) {
        int code = (int) number(result);
        ClaimResult outcome = switch (code) {
            case CLAIMED -> ClaimResult.CLAIMED;
            case CONFIRMED -> ClaimResult.ALREADY_CONFIRMED;
            case IN_PROGRESS -> ClaimResult.IN_PROGRESS;
            default -> throw new IllegalStateException("unexpected claim result from Redis: " + code);
        };
        String print = fingerprint == null || fingerprint.toString().isEmpty() ? null : fingerprint.toString();
        return new Claim(messageId, outcome, (int) Math.min(Integer.MAX_VALUE, number(attempt)), print);
    }

    private static long number(Object value) {
        if (value instanceof Number number) {
            return number.longValue();
        }
        throw new IllegalStateException("unexpected reply from Redis: " + value);
    }

    private static int requireLease(Claim claim) {
        Objects.requireNonNull(claim, "claim must not be null");
        MessageIds.requireValid(claim.messageId());
        if (!claim.claimed()) {
            throw new IllegalArgumentException("claim must be a CLAIMED claim from acquire, but was " + claim.result());
        }
        return claim.attempt();
    }

    private static long ceilMillis(Duration duration) {
        long millis = duration.toMillis();
        return duration.minusMillis(millis).isZero() ? millis : millis + 1;
    }

    private static String generatedOwner() {
        return "redis-" + ProcessHandle.current().pid() + "-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xFFFF_FFFF_FFFFL);
    }

    /**
     * Builds a {@link RedisIdempotencyStore}. Each setter validates its value at once; {@link #build()} checks the
     * settings against each other and opens the connection. Not thread-safe.
     */
    public static final class Builder {

        private final RedisClient client;
        private final RedisClusterClient clusterClient;
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private Duration lease = DEFAULT_LEASE;
        private Duration retention = DEFAULT_RETENTION;
        private Duration timeout = DEFAULT_TIMEOUT;
        private String owner;

        private Builder(RedisClient client, RedisClusterClient clusterClient) {
            this.client = client;
            this.clusterClient = clusterClient;
        }

        /**
         * @param keyPrefix put in front of every key; default {@link #DEFAULT_KEY_PREFIX}. Stores that share a prefix
         *     on one Redis share their records (as consumers sharing a table do).
         * @return this builder
         * @throws IllegalArgumentException if it holds a brace (it would change the hash tag)
         */
        public Builder keyPrefix(String keyPrefix) {
            Objects.requireNonNull(keyPrefix, "keyPrefix must not be null");
            if (keyPrefix.indexOf('{') >= 0 || keyPrefix.indexOf('}') >= 0) {
                throw new IllegalArgumentException("keyPrefix must not hold '{' or '}', but was '" + keyPrefix + "'");
            }
            this.keyPrefix = keyPrefix;
            return this;
        }

        /**
         * @param lease how long a claim lasts unless renewed; default {@link #DEFAULT_LEASE}
         * @return this builder
         */
        public Builder lease(Duration lease) {
            this.lease = requirePositive("lease", lease);
            return this;
        }

        /**
         * @param retention how long a confirmed identifier is remembered; default {@link #DEFAULT_RETENTION}
         * @return this builder
         */
        public Builder retention(Duration retention) {
            this.retention = requirePositive("retention", retention);
            return this;
        }

        /**
         * @param timeout how long a call waits for Redis before it fails with {@link StoreUnavailableException} (a
         *     batch split over several slots of a cluster: all of them together); default {@link #DEFAULT_TIMEOUT}
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            this.timeout = requirePositive("timeout", timeout);
            return this;
        }

        /**
         * @param owner this store's owner identity, or null for a generated one (the default); two stores with the
         *     same owner and prefix on one Redis are one owner
         * @return this builder
         */
        public Builder owner(String owner) {
            if (owner != null && owner.isBlank()) {
                throw new IllegalArgumentException("owner must not be blank, but was '" + owner + "'");
            }
            this.owner = owner;
            return this;
        }

        /**
         * Opens the store's connection, makes sure the key prefix's records are in this version's key layout, and
         * returns the store. The first store built on a prefix moves the records of the first key layout
         * ({@code <keyPrefix>{<identifier>}}, written by earlier versions) to their new keys and then writes a marker
         * ({@code <keyPrefix>layout}); it scans the whole key space once for them, so on a large Redis that first
         * build takes a while. Every later build reads the marker only. Stop the consumers of the earlier version
         * before starting this one (see {@code docs/redis-store.md}, "Upgrading from the first key layout").
         *
         * @return the store
         * @throws IllegalArgumentException if the retention is shorter than the lease
         * @throws StoreUnavailableException if Redis cannot be reached, or does not answer a step of the move in time
         * @throws IllegalStateException if the prefix's marker names a key layout of another (later) version
         */
        public RedisIdempotencyStore build() {
            if (retention.compareTo(lease) < 0) {
                throw new IllegalArgumentException("retention must be >= lease (" + lease + "), but was " + retention);
            }
            ScriptRunner runner;
            try {
                runner = client != null ? ScriptRunner.standalone(client.connect(StringCodec.UTF8), timeout)
                        : ScriptRunner.cluster(clusterClient.connect(StringCodec.UTF8), timeout);
            } catch (RedisException e) {
                throw new StoreUnavailableException("cannot connect to Redis: " + e.getMessage(), e);
            }
            KeyLayout layout = new KeyLayout(keyPrefix);
            try {
                LayoutMigration.ensure(runner, layout);
            } catch (RuntimeException e) {
                try {
                    runner.close();
                } catch (RuntimeException closing) {
                    e.addSuppressed(closing);
                }
                throw e;
            }
            return new RedisIdempotencyStore(this, runner, layout);
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

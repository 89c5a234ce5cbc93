package org.acemq.amqp.store.redis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.acemq.amqp.testkit.IdempotencyStoreContract;

import io.lettuce.core.KeyScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisKeyCommands;
import io.lettuce.core.api.sync.RedisScriptingCommands;

/**
 * The store contract against a real Redis. Every {@link #createStore} gets its own key prefix (empty state without
 * flushing a server other tests may share); peers share it with another owner. Time moves by shifting every record's
 * lease end and forget time (and its {@code PEXPIREAT}) back, because the store reads only the Redis server's clock.
 */
abstract class RedisContractBase extends IdempotencyStoreContract<RedisIdempotencyStore> {

    /** Moves a record's times back by ARGV[1] ms; its expiry with them. */
    private static final String SHIFT = """
            local r = redis.call('HMGET', KEYS[1], 'd', 'x')
            if not r[2] then return 0 end
            local amount = tonumber(ARGV[1])
            local forget = tonumber(r[2]) - amount
            redis.call('HSET', KEYS[1], 'd', tonumber(r[1]) - amount, 'x', forget)
            redis.call('PEXPIREAT', KEYS[1], forget)
            return 1
            """;

    private static final AtomicInteger PREFIXES = new AtomicInteger();

    private final List<String> prefixes = new CopyOnWriteArrayList<>();

    /** @return a builder on the shared Redis */
    abstract RedisIdempotencyStore.Builder builder();

    /** @return commands that reach every key (on a cluster: routed by key, SCAN over all masters) */
    abstract <C extends RedisKeyCommands<String, String> & RedisScriptingCommands<String, String>> C admin();

    @Override
    protected RedisIdempotencyStore createStore(Duration lease, Duration retention) {
        String prefix = "contract" + PREFIXES.incrementAndGet() + "-" + ProcessHandle.current().pid() + ":";
        prefixes.add(prefix);
        return builder().keyPrefix(prefix).lease(lease).retention(retention).build();
    }

    @Override
    protected RedisIdempotencyStore createPeer(RedisIdempotencyStore first) {
        return builder().keyPrefix(first.keyPrefix()).lease(first.leaseDuration()).retention(first.retention())
                .build();
    }

    @Override
    protected void advanceTime(Duration amount) {
        var commands = admin();
        String millis = Long.toString(amount.toMillis());
        for (String prefix : prefixes) {
            ScanIterator<String> keys = ScanIterator.scan(commands, KeyScanArgs.Builder.limit(1000)
                    .match(prefix + "*"));
            while (keys.hasNext()) {
                commands.eval(SHIFT, ScriptOutputType.INTEGER, new String[] {keys.next()}, millis);
            }
        }
    }

    @Override
    protected void closeStore(RedisIdempotencyStore store) {
        store.close();
    }
}

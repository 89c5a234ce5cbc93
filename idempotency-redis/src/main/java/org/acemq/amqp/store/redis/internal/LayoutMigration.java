package org.acemq.amqp.store.redis.internal;

import java.util.ArrayList;
import java.util.List;

import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.api.StoreUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;

/**
 * Moves the records of the first key layout ({@code <prefix>{<identifier>}}) to {@link KeyLayout}'s, once per key
 * prefix, when a store is built. A marker hash at {@link KeyLayout#markerKey()} (field {@code v}: the layout's version)
 * says it is done; while it is missing, every store built on the prefix scans for keys of the first layout
 * ({@code SCAN MATCH <prefix>{*}} over every master), writes each record they hold at its new key (unless a record is
 * there already: see migrate.lua), deletes the old key, and when the scan found none left writes the marker.
 *
 * <p>Safe with several stores doing it at once (each copy is written only where none is, and a store starts working
 * only after its own pass) provided nothing writes keys of the first layout meanwhile: the stores of the earlier
 * version must be stopped first (docs/redis-store.md, "Upgrading from the first key layout").
 */
public final class LayoutMigration {

    private static final Logger LOG = LoggerFactory.getLogger(LayoutMigration.class);
    /** Keys asked of each SCAN step, and so at most the records moved at once. */
    static final int PAGE = 1000;
    private static final String[] FIELDS = {"s", "o", "a", "d", "x", "f"};

    private LayoutMigration() {
    }

    /**
     * Makes sure the prefix's records are in {@link KeyLayout}: reads the marker, and when it is missing moves the
     * first layout's records and writes it.
     *
     * @param runner the store's connection
     * @param layout the store's key layout
     * @return how many records were moved (0 when the marker was there)
     * @throws StoreUnavailableException if Redis does not answer in time or fails
     * @throws IllegalStateException if the marker names a layout other than this one (a later version wrote it)
     */
    public static long ensure(ScriptRunner runner, KeyLayout layout) {
        String marker = layout.markerKey();
        String version = runner.call("read the key layout marker " + marker, c -> c.hget(marker, "v"));
        if (KeyLayout.VERSION.equals(version)) {
            return 0;
        }
        if (version != null) {
            throw new IllegalStateException("the records under this key prefix are in key layout " + version
                    + " (marker " + marker + "), which this version of the Redis store does not read (it reads and "
                    + "writes layout " + KeyLayout.VERSION + "): use the version of acemq-idempotency-redis that "
                    + "wrote them, or another keyPrefix");
        }
        long moved = 0;
        long seen = 0;
        ScanArgs matching = ScanArgs.Builder.matches(layout.legacyPattern()).limit(PAGE);
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            ScanCursor from = cursor;
            KeyScanCursor<String> page = runner.call("scan for keys of the first key layout",
                    c -> c.scan(from, matching));
            seen += page.getKeys().size();
            moved += move(runner, layout, page.getKeys());
            cursor = page;
        } while (!cursor.isFinished());
        runner.call("write the key layout marker " + marker, c -> c.hset(marker, "v", KeyLayout.VERSION));
        if (seen > 0) {
            LOG.info("Redis store: found {} keys of the first key layout ({}), copied {} records to key layout {} "
                    + "and deleted the keys (the others held a record forgotten already, or one that layout {} had "
                    + "already)", seen, layout.legacyPattern(), moved, KeyLayout.VERSION, KeyLayout.VERSION);
        } else {
            LOG.debug("Redis store: no keys of the first key layout under {}; marker {} written", layout.legacyPattern(),
                    marker);
        }
        return moved;
    }

    /** Moves the records at {@code keys}; returns how many were written at their new keys. */
    private static long move(ScriptRunner runner, KeyLayout layout, List<String> keys) {
        if (keys.isEmpty()) {
            return 0;
        }
        List<Object> records = runner.callEach("read records of the first key layout",
                (c, key) -> c.hmget(key, FIELDS), keys);
        List<String> oldKeys = new ArrayList<>(keys.size());
        List<String> newKeys = new ArrayList<>(keys.size());
        List<String> fields = new ArrayList<>(keys.size() * FIELDS.length);
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            Object record = records.get(i);
            if (record instanceof RedisCommandExecutionException error) {
                // a key of another type under the prefix (WRONGTYPE): not one of the store's records, left alone
                LOG.warn("Redis store: {} looks like a record key of the first layout but is not a record ({}); "
                        + "left as it is", key, error.getMessage());
                continue;
            }
            String id = layout.legacyIdentifier(key);
            if (!valid(id)) {
                LOG.warn("Redis store: {} holds no valid identifier; left as it is", key);
                continue;
            }
            oldKeys.add(key);
            @SuppressWarnings("unchecked")
            List<KeyValue<String, String>> values = (List<KeyValue<String, String>>) record;
            if (!values.get(0).hasValue() || !values.get(4).hasValue()) {
                continue; // gone since the scan, or not a complete record: nothing to move
            }
            newKeys.add(layout.key(id));
            for (KeyValue<String, String> value : values) {
                fields.add(value.getValueOrElse(""));
            }
        }
        long written = 0;
        if (!newKeys.isEmpty()) {
            Object[] replies;
            try {
                replies = runner.perSlot(RedisScript.MIGRATE, newKeys, List.of(), fields, FIELDS.length, 1);
            } catch (ScriptRunner.PartialBatchException e) {
                throw new StoreUnavailableException(e.getMessage(), e.getCause());
            }
            for (Object reply : replies) {
                if (reply instanceof Number n && n.longValue() == 1) {
                    written++;
                }
            }
        }
        if (!oldKeys.isEmpty()) {
            // on a cluster Lettuce splits the keys by slot
            runner.call("delete moved keys of the first key layout",
                    c -> c.unlink(oldKeys.toArray(new String[0])));
        }
        return written;
    }

    private static boolean valid(String id) {
        try {
            MessageIds.requireValid(id);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}

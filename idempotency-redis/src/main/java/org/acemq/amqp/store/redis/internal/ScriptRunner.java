package org.acemq.amqp.store.redis.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import java.util.function.Function;

import org.acemq.amqp.api.StoreUnavailableException;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;

/**
 * Runs the store's scripts over one Lettuce connection, standalone or cluster: EVALSHA first, EVAL (which caches the
 * script) when the server answers NOSCRIPT, and every failure to get an answer in time turned into
 * {@link StoreUnavailableException}.
 *
 * <p>A script call that names several keys must, on a cluster, name keys of one hash slot only. {@link #perSlot}
 * therefore splits a batch into one call per slot (sent at once, answered in parallel) on a cluster, and makes it one
 * call on a standalone server. {@link #call} and {@link #callEach} send the few plain commands the key layout's
 * migration needs, under the same timeout.
 */
public final class ScriptRunner implements AutoCloseable {

    private final AutoCloseable connection;
    private final RedisClusterAsyncCommands<String, String> commands;
    private final boolean cluster;
    private final long timeoutMillis;

    private ScriptRunner(AutoCloseable connection, RedisClusterAsyncCommands<String, String> commands,
            boolean cluster, Duration timeout) {
        this.connection = connection;
        this.commands = commands;
        this.cluster = cluster;
        this.timeoutMillis = Math.max(1, timeout.toMillis());
    }

    /**
     * @param connection a standalone (or Sentinel-managed) connection; closed by {@link #close()}
     * @param timeout how long to wait for an answer
     * @return a runner over it
     */
    public static ScriptRunner standalone(StatefulRedisConnection<String, String> connection, Duration timeout) {
        return new ScriptRunner(connection, connection.async(), false, timeout);
    }

    /**
     * @param connection a cluster connection; closed by {@link #close()}
     * @param timeout how long to wait for an answer
     * @return a runner over it
     */
    public static ScriptRunner cluster(StatefulRedisClusterConnection<String, String> connection, Duration timeout) {
        return new ScriptRunner(connection, connection.async(), true, timeout);
    }

    /** @return whether this runs against a Redis Cluster */
    public boolean isCluster() {
        return cluster;
    }

    /**
     * Runs a script on one key or on keys of one slot, and waits for its answer.
     *
     * @param script the script
     * @param keys its KEYS
     * @param args its ARGV
     * @return the script's reply (a list for the store's scripts)
     * @throws StoreUnavailableException if no answer came in time or Redis answered with an error
     */
    public List<Object> run(RedisScript script, String[] keys, String... args) {
        return await(call(script, keys, args), "script " + script.name(), deadline());
    }

    /**
     * Runs a batch script that answers {@code width} values per key: in one call on a standalone server, in one call
     * per hash slot on a cluster (all sent before any answer is awaited). {@code args} are the shared arguments and
     * {@code perKey} the per-key ones, {@code argsPerKey} for each key in key order (ARGV is the shared ones followed
     * by the per-key ones of the call's keys, in key order).
     *
     * @param script the script
     * @param keys the keys, in order (repeats allowed; a repeated key stays in order within its slot)
     * @param args the shared arguments
     * @param perKey {@code argsPerKey} arguments per key
     * @param argsPerKey how many of {@code perKey} belong to each key
     * @param width how many reply values the script gives per key
     * @return the replies, {@code width} per key, in the order of {@code keys}
     * @throws StoreUnavailableException if any call failed; the calls that did answer have taken effect
     */
    public Object[] perSlot(RedisScript script, List<String> keys, List<String> args, List<String> perKey,
            int argsPerKey, int width) {
        int n = keys.size();
        if (!cluster) {
            List<Object> reply = run(script, keys.toArray(new String[0]), concat(args, perKey));
            return reply.toArray();
        }
        Map<Integer, List<Integer>> bySlot = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            bySlot.computeIfAbsent(SlotHash.getSlot(keys.get(i)), slot -> new ArrayList<>()).add(i);
        }
        List<List<Integer>> groups = new ArrayList<>(bySlot.values());
        List<CompletableFuture<List<Object>>> calls = new ArrayList<>(groups.size());
        for (List<Integer> group : groups) {
            String[] groupKeys = new String[group.size()];
            List<String> groupArgs = new ArrayList<>(group.size() * argsPerKey);
            for (int j = 0; j < group.size(); j++) {
                int key = group.get(j);
                groupKeys[j] = keys.get(key);
                groupArgs.addAll(perKey.subList(key * argsPerKey, (key + 1) * argsPerKey));
            }
            calls.add(call(script, groupKeys, concat(args, groupArgs)));
        }
        Object[] replies = new Object[n * width];
        StoreUnavailableException failure = null;
        // one deadline for the whole batch: the calls run in parallel, so waiting up to the timeout for each in turn
        // would make a batch over k slots of a dead master take k timeouts to fail
        long deadline = deadline();
        // woken once, when the last call is answered (not once per call), then every answer is collected at once
        awaitAll(calls, deadline);
        for (int g = 0; g < groups.size(); g++) {
            try {
                List<Object> reply = await(calls.get(g), "script " + script.name(), deadline);
                List<Integer> group = groups.get(g);
                for (int j = 0; j < group.size(); j++) {
                    for (int w = 0; w < width; w++) {
                        replies[group.get(j) * width + w] = reply.get(j * width + w);
                    }
                }
            } catch (StoreUnavailableException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw new PartialBatchException(failure, replies);
        }
        return replies;
    }

    /**
     * Sends any other command and waits for its answer.
     *
     * @param what what the command does, for the exception's message
     * @param command sends the command over the store's connection (on a cluster, Lettuce routes it by key; a
     *     {@code SCAN} visits every master)
     * @param <T> the answer's type
     * @return the answer
     * @throws StoreUnavailableException if no answer came in time or Redis answered with an error
     */
    public <T> T call(String what, Function<RedisClusterAsyncCommands<String, String>, CompletionStage<T>> command) {
        return await(command.apply(commands).toCompletableFuture(), what, deadline());
    }

    /**
     * Sends commands (all before any answer is awaited) and waits for their answers, within one timeout in all.
     *
     * @param what what the commands do, for the exception's message
     * @param command sends one command over the store's connection
     * @param inputs one per command
     * @param <I> the input's type
     * @param <T> the answer's type
     * @return the answers, in the order of {@code inputs}; for a command Redis answered with an error, that error
     * @throws StoreUnavailableException if an answer did not come in time or the connection failed
     */
    public <I, T> List<Object> callEach(String what,
            BiFunction<RedisClusterAsyncCommands<String, String>, I, CompletionStage<T>> command,
            List<I> inputs) {
        List<CompletableFuture<T>> sent = new ArrayList<>(inputs.size());
        for (I input : inputs) {
            sent.add(command.apply(commands, input).toCompletableFuture());
        }
        long deadline = deadline();
        List<Object> answers = new ArrayList<>(inputs.size());
        for (CompletableFuture<T> future : sent) {
            try {
                answers.add(await(future, what, deadline));
            } catch (StoreUnavailableException e) {
                if (e.getCause() instanceof RedisCommandExecutionException error) {
                    answers.add(error);
                } else {
                    throw e;
                }
            }
        }
        return answers;
    }

    private static String[] concat(List<String> args, List<String> perKey) {
        String[] all = new String[args.size() + perKey.size()];
        int i = 0;
        for (String arg : args) {
            all[i++] = arg;
        }
        for (String arg : perKey) {
            all[i++] = arg;
        }
        return all;
    }

    private CompletableFuture<List<Object>> call(RedisScript script, String[] keys, String... args) {
        CompletionStage<List<Object>> first = commands.evalsha(script.sha(), ScriptOutputType.MULTI, keys, args);
        return first.handle((reply, error) -> {
            if (error == null) {
                return CompletableFuture.completedFuture(reply);
            }
            Throwable cause = unwrap(error);
            if (cause instanceof RedisNoScriptException) {
                CompletionStage<List<Object>> loaded = commands.eval(script.text(), ScriptOutputType.MULTI, keys,
                        args);
                return loaded.toCompletableFuture();
            }
            return CompletableFuture.<List<Object>>failedFuture(cause);
        }).thenCompose(stage -> stage).toCompletableFuture();
    }

    /** Waits until every call has its answer (or failure), or the deadline passes; reports nothing itself. */
    private static void awaitAll(List<CompletableFuture<List<Object>>> calls, long deadline) {
        try {
            CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0]))
                    .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // each call's own outcome is read (and reported) one by one after this
        }
    }

    private long deadline() {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    }

    /** Waits for a call's answer until {@code deadline} (of {@link System#nanoTime()}); an answer already in counts. */
    private <T> T await(CompletableFuture<T> call, String what, long deadline) {
        try {
            return call.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for Redis (" + what + ")", e);
        } catch (TimeoutException e) {
            call.cancel(false);
            throw new StoreUnavailableException("Redis did not answer within " + timeoutMillis + " ms (" + what + ")",
                    e);
        } catch (ExecutionException e) {
            Throwable cause = unwrap(e);
            throw new StoreUnavailableException("Redis call failed (" + what + "): " + cause, cause);
        }
    }

    private static Throwable unwrap(Throwable error) {
        Throwable cause = error;
        while ((cause instanceof ExecutionException || cause instanceof CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    @Override
    public void close() {
        try {
            connection.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing the Redis connection failed", e);
        }
    }

    /**
     * A batch of which some per-slot calls failed: the failure, and the replies of the calls that answered (null where
     * a key's call failed), so the caller can undo what those did.
     */
    public static final class PartialBatchException extends StoreUnavailableException {

        private static final long serialVersionUID = 1L;

        private final transient Object[] replies;

        PartialBatchException(StoreUnavailableException failure, Object[] replies) {
            super(failure.getMessage(), failure.getCause());
            for (Throwable suppressed : failure.getSuppressed()) {
                addSuppressed(suppressed);
            }
            this.replies = replies;
        }

        /** @return the replies, {@code width} per key, null for the keys whose call failed */
        public Object[] replies() {
            return replies;
        }
    }
}

package org.acemq.amqp.store.jdbc.internal;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.StoreUnavailableException;

/**
 * Runs the batch statements of the store's {@link StoreDialect} (on PostgreSQL the array statements of
 * {@link PostgresBatchSql}) for a list of requests, one transaction and one commit per list, and answers every request exactly as the single-id statement would have answered it had the
 * requests run one after the other, in list order, in that transaction. Used by the group commit (requests of many
 * callers, see {@link JdbcGroupCommit}) and by the store's own batch calls ({@code acquireAll}, {@code confirmAll},
 * {@code releaseAll}: one caller's requests).
 *
 * <p>The statements need distinct ids ({@code ON CONFLICT DO UPDATE} cannot touch a row twice in one statement),
 * sorted (locks in id order); repeats are answered here:
 * <ul>
 *   <li>acquire: the first request of an id gets the statement's answer, and its fingerprint is the one recorded; a
 *       later one gets IN_PROGRESS with the same attempt and fingerprint if the first CLAIMED (the store is not
 *       re-entrant), else the first's answer.</li>
 *   <li>confirm(String): one upsert records completion for all of them.</li>
 *   <li>confirm(Claim): the first gets the statement's held flag; later ones get false (the id is confirmed by
 *       then). The attempt recorded for a missing row is the first's.</li>
 *   <li>release(Claim): distinct (id, attempt) pairs are sent; of the requests naming the released lease, the first
 *       gets true and the others false; stale claims get false.</li>
 * </ul>
 *
 * <p>A statement that the database aborted as a deadlock victim or a serialization failure (PostgreSQL 40P01 or 40001,
 * MariaDB 1213 or 1205 (lock wait timeout), H2 40001) had no effect and is run again, up to {@value #RETRIES} times. Any other failure is thrown as the
 * {@link StoreUnavailableException} of the {@link Runner}, with the {@link SQLException} as its cause; nothing was
 * written.
 */
public final class BatchStatements {

    /** How often a statement aborted as a deadlock victim (or serialization failure) is run again. */
    public static final int RETRIES = 2;

    /** Runs one autocommit statement on a connection of the store's own. */
    public interface Runner {
        /**
         * @param operation for messages
         * @param call the statement
         * @param <T> the result type
         * @return the call's result
         * @throws StoreUnavailableException for any SQLException, which is its cause
         */
        <T> T run(String operation, JdbcGroupCommit.SqlCall<T> call);
    }

    /** The store's dialect, read from the connection the first time. */
    public interface DialectSource {
        /**
         * @param c a connection of the store's own
         * @return the dialect, read from {@code c}'s metadata if not known yet
         * @throws SQLException if reading it fails
         */
        StoreDialect on(java.sql.Connection c) throws SQLException;

        /** @return the dialect, or null if no connection has told it yet */
        StoreDialect known();
    }

    private final DialectSource dialect;
    private final UUID owner;

    /**
     * @param dialect the store's dialect
     * @param owner the store's owner id
     */
    public BatchStatements(DialectSource dialect, UUID owner) {
        this.dialect = dialect;
        this.owner = owner;
    }

    /**
     * @param runner where the statement runs
     * @param ids valid ids, in request order, repeats allowed
     * @param fingerprints one valid fingerprint (or null) per id, same order; for a repeated id the first copy's is
     *     the one recorded, and the later copies report it
     * @return one claim per id, in order
     */
    public Claim[] acquire(Runner runner, List<String> ids, List<String> fingerprints) {
        Map<String, String> firstPrint = new HashMap<>(ids.size() * 2);
        for (int i = 0; i < ids.size(); i++) {
            if (!firstPrint.containsKey(ids.get(i))) {
                firstPrint.put(ids.get(i), fingerprints.get(i));
            }
        }
        String[] distinct = firstPrint.keySet().stream().sorted().toArray(String[]::new);
        String[] prints = new String[distinct.length];
        for (int i = 0; i < distinct.length; i++) {
            prints[i] = firstPrint.get(distinct[i]);
        }
        Map<String, Claim> found = execute(runner, "acquire",
                c -> dialect.on(c).acquireAll(c, distinct, prints, owner));
        Claim[] answers = new Claim[ids.size()];
        Map<String, Claim> first = new HashMap<>(distinct.length * 2);
        for (int i = 0; i < answers.length; i++) {
            String id = ids.get(i);
            Claim previous = first.get(id);
            if (previous == null) {
                Claim row = found.get(id);
                answers[i] = row == null ? new Claim(id, ClaimResult.IN_PROGRESS, 0) : row;
                first.put(id, answers[i]);
            } else if (previous.claimed()) {
                answers[i] = new Claim(id, ClaimResult.IN_PROGRESS, previous.attempt(), previous.fingerprint());
            } else {
                answers[i] = previous;
            }
        }
        return answers;
    }

    /**
     * @param runner where the statement runs
     * @param ids valid ids, repeats allowed
     */
    public void confirmIds(Runner runner, List<String> ids) {
        String[] distinct = ids.stream().distinct().sorted().toArray(String[]::new);
        execute(runner, "confirm", c -> {
            dialect.on(c).confirmAll(c, distinct);
            return null;
        });
    }

    /**
     * @param runner where the statement runs
     * @param claims claims with valid ids, in request order, repeats allowed
     * @return per claim, whether it still held its lease (or had confirmed the id in a transaction itself)
     */
    public boolean[] confirmClaims(Runner runner, List<Claim> claims) {
        Map<String, Integer> firstById = new LinkedHashMap<>();
        for (int i = 0; i < claims.size(); i++) {
            firstById.putIfAbsent(claims.get(i).messageId(), i);
        }
        Set<String> held = runClaimArrays(runner, "confirm", claims, firstById.values(),
                (c, ids, attempts) -> dialect.on(c).confirmClaims(c, ids, attempts, owner));
        boolean[] answers = new boolean[claims.size()];
        for (int i = 0; i < answers.length; i++) {
            Claim claim = claims.get(i);
            answers[i] = firstById.get(claim.messageId()) == i && held.contains(claim.messageId()) && claim.claimed();
        }
        return answers;
    }

    /**
     * @param runner where the statement runs
     * @param claims CLAIMED claims with valid ids, in request order, repeats allowed
     * @return per claim, whether it released the current lease
     */
    public boolean[] releaseClaims(Runner runner, List<Claim> claims) {
        Map<String, Integer> pairs = new LinkedHashMap<>(); // "attempt:id" -> first request naming that lease
        for (int i = 0; i < claims.size(); i++) {
            pairs.putIfAbsent(lease(claims.get(i)), i);
        }
        Set<String> released = runClaimArrays(runner, "release", claims, pairs.values(),
                (c, ids, attempts) -> dialect.on(c).releaseClaims(c, ids, attempts, owner));
        boolean[] answers = new boolean[claims.size()];
        for (int i = 0; i < answers.length; i++) {
            String key = lease(claims.get(i));
            answers[i] = pairs.get(key) == i && released.contains(key);
        }
        return answers;
    }

    private static String lease(Claim claim) {
        return claim.attempt() + ":" + claim.messageId();
    }

    /**
     * @param failure a failure of one of these statements
     * @return whether the database refused the data of the statement (a key it cannot hold: on PostgreSQL SQLState
     *     class 22, see {@link StoreDialect#isRefusedKey}), as opposed to the database being unreachable or failing
     */
    public boolean isDataError(StoreUnavailableException failure) {
        return failure.getCause() instanceof SQLException s && isDataError(s);
    }

    /**
     * @param e an exception from the driver
     * @return whether the store's dialect counts it as a refused key
     */
    public boolean isDataError(SQLException e) {
        StoreDialect d = dialect.known();
        return d != null && d.isRefusedKey(e);
    }

    // ------------------------------------------------------------------------------------------------ plumbing

    /** A batch statement over (ids[], attempts[]) returning row keys. */
    @FunctionalInterface
    private interface ClaimArrays {
        Set<String> run(java.sql.Connection c, String[] ids, Integer[] attempts) throws SQLException;
    }

    /**
     * Runs a statement over the claims at {@code indexes} (sorted by id, so locks are taken in id order) and returns
     * the keys it returned.
     */
    private Set<String> runClaimArrays(Runner runner, String operation, List<Claim> claims,
                                       Iterable<Integer> indexes, ClaimArrays statement) {
        List<Claim> sorted = new ArrayList<>();
        for (int i : indexes) {
            sorted.add(claims.get(i));
        }
        sorted.sort(Comparator.comparing(Claim::messageId));
        String[] ids = new String[sorted.size()];
        Integer[] attempts = new Integer[sorted.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = sorted.get(i).messageId();
            attempts[i] = sorted.get(i).attempt();
        }
        return execute(runner, operation, c -> statement.run(c, ids, attempts));
    }

    /** Runs one statement (or transaction), running it again when the database aborted it as a deadlock victim. */
    private <T> T execute(Runner runner, String operation, JdbcGroupCommit.SqlCall<T> call) {
        for (int attempt = 0;; attempt++) {
            try {
                return runner.run(operation, call);
            } catch (StoreUnavailableException e) {
                if (attempt < RETRIES && e.getCause() instanceof SQLException s && retryable(s)) {
                    continue;
                }
                throw e;
            }
        }
    }

    private boolean retryable(SQLException e) {
        StoreDialect d = dialect.known();
        return d != null && d.isRetryable(e);
    }
}

package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
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
 * Group commit for {@code JdbcIdempotencyStore}: {@code acquire}, {@code confirm(String)}, {@code confirm(Claim)}
 * and {@code release(Claim)} of concurrent callers are coalesced by a {@link GroupCommit} into one
 * {@link PostgresBatchSql} statement per batch (one lane per operation, a shared limit of batches in flight).
 *
 * <p><b>Each caller gets exactly the answer the single-id statement would have given it.</b> A batch of one request
 * runs the store's single-id statement itself. Larger batches send each id once (de-duplicated; the statements need
 * distinct ids) and answer repeated ids as if the repeats had run one after the other, right after the first,
 * inside the same transaction:
 * <ul>
 *   <li>acquire: the first request of an id gets the statement's answer; a later one of the same store gets
 *       IN_PROGRESS with the same attempt if the first CLAIMED (the store is not re-entrant), else the first's
 *       answer.</li>
 *   <li>confirm(String): one upsert records completion for all of them.</li>
 *   <li>confirm(Claim): the first gets the statement's held flag; later ones get false (the id is confirmed by
 *       then). The attempt recorded for a missing row is the first's.</li>
 *   <li>release(Claim): distinct (id, attempt) pairs are sent; of the requests naming the released lease, the first
 *       gets true and the others false; stale claims get false.</li>
 * </ul>
 *
 * <p><b>Atomicity.</b> A batch is one autocommit statement: it commits completely or not at all. If it fails, every
 * caller in it gets a {@link StoreUnavailableException} of its own (naming its id and the batch) with the same
 * {@link SQLException} as cause, and nothing was written. A batch that PostgreSQL aborted as a deadlock victim
 * (SQLState 40P01) or a serialization failure (40001) had no effect and is retried up to {@value #RETRIES} times
 * before it fails.
 */
public final class JdbcGroupCommit {

    /** How often a batch aborted as a deadlock victim (or serialization failure) is retried. */
    public static final int RETRIES = 2;

    /** What the group commit needs from the store: its single-id operations and its connection handling. */
    public interface Backend {
        /** @param id a valid id @return the single-id acquire */
        Claim acquireOne(String id);

        /** @param id a valid id */
        void confirmOne(String id);

        /** @param claim a claim with a valid id @return the single-id confirm(Claim) */
        boolean confirmOne(Claim claim);

        /** @param claim a CLAIMED claim with a valid id @return the single-id release(Claim) */
        boolean releaseOne(Claim claim);

        /**
         * Runs one autocommit statement on a connection of the store's own and maps every SQLException to a
         * StoreUnavailableException (with the SQLException as cause).
         *
         * @param operation for messages
         * @param call the statement
         * @param <T> the result type
         * @return the call's result
         */
        <T> T run(String operation, SqlCall<T> call);
    }

    /**
     * A statement on a connection.
     *
     * @param <T> the result type
     */
    @FunctionalInterface
    public interface SqlCall<T> {
        /**
         * @param connection an autocommit connection
         * @return the result
         * @throws SQLException on any database error
         */
        T apply(Connection connection) throws SQLException;
    }

    private final PostgresBatchSql sql;
    private final UUID owner;
    private final Backend backend;
    private final String table;
    private final boolean arraySqlForSingletons;
    private final GroupCommit groupCommit;
    private final GroupCommit.Lane<IdRequest<Claim>> acquireLane;
    private final GroupCommit.Lane<IdRequest<Boolean>> confirmIdLane;
    private final GroupCommit.Lane<ClaimRequest> confirmClaimLane;
    private final GroupCommit.Lane<ClaimRequest> releaseClaimLane;

    /**
     * @param sql the batch statements
     * @param owner the store's owner id
     * @param table the table name, for messages
     * @param maxBatch the most requests per statement
     * @param maxInFlight the most statements executing at once (over all four operations)
     * @param arraySqlForSingletons run a batch of one through the array statement too (tests only; normally a batch
     *     of one runs the single-id statement)
     * @param backend the store
     */
    public JdbcGroupCommit(PostgresBatchSql sql, UUID owner, String table, int maxBatch, int maxInFlight,
            boolean arraySqlForSingletons, Backend backend) {
        this.sql = sql;
        this.owner = owner;
        this.table = table;
        this.backend = backend;
        this.arraySqlForSingletons = arraySqlForSingletons;
        this.groupCommit = new GroupCommit(maxBatch, maxInFlight);
        this.acquireLane = groupCommit.lane("acquire", this::acquireBatch);
        this.confirmIdLane = groupCommit.lane("confirm(String)", this::confirmIdBatch);
        this.confirmClaimLane = groupCommit.lane("confirm(Claim)", this::confirmClaimBatch);
        this.releaseClaimLane = groupCommit.lane("release(Claim)", this::releaseClaimBatch);
    }

    /** @param id a valid id @return as {@code LeasedIdempotencyStore.acquire} */
    public Claim acquire(String id) {
        return acquireLane.submit(new IdRequest<Claim>("acquire", id));
    }

    /** @param id a valid id */
    public void confirm(String id) {
        confirmIdLane.submit(new IdRequest<Boolean>("confirm", id));
    }

    /** @param claim a claim with a valid id @return as {@code LeasedIdempotencyStore.confirm(Claim)} */
    public boolean confirm(Claim claim) {
        return confirmClaimLane.submit(new ClaimRequest("confirm", claim));
    }

    /** @param claim a CLAIMED claim with a valid id @return as {@code LeasedIdempotencyStore.release(Claim)} */
    public boolean release(Claim claim) {
        return releaseClaimLane.submit(new ClaimRequest("release", claim));
    }

    /** @return batches executing right now */
    public int inFlight() {
        return groupCommit.inFlight();
    }

    // ------------------------------------------------------------------------------------------------- batches

    private void acquireBatch(List<IdRequest<Claim>> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            IdRequest<Claim> only = batch.get(0);
            only.complete(backend.acquireOne(only.id));
            return;
        }
        String[] ids = distinctSorted(batch);
        Map<String, int[]> found = execute("acquire", batch, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.acquire)) {
                ps.setArray(1, c.createArrayOf("text", ids));
                ps.setObject(2, owner);
                Map<String, int[]> rows = new HashMap<>(ids.length * 2);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rows.put(rs.getString(1), new int[] {rs.getInt(2), rs.getInt(3)});
                    }
                }
                return rows;
            }
        });
        Map<String, Claim> first = new HashMap<>();
        for (IdRequest<Claim> r : batch) {
            Claim previous = first.get(r.id);
            Claim answer;
            if (previous == null) {
                int[] row = found.get(r.id);
                answer = row == null ? new Claim(r.id, ClaimResult.IN_PROGRESS, 0)
                        : new Claim(r.id, result(row[0]), row[1]);
                first.put(r.id, answer);
            } else if (previous.claimed()) {
                answer = new Claim(r.id, ClaimResult.IN_PROGRESS, previous.attempt());
            } else {
                answer = previous;
            }
            r.complete(answer);
        }
    }

    private void confirmIdBatch(List<IdRequest<Boolean>> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            IdRequest<Boolean> only = batch.get(0);
            backend.confirmOne(only.id);
            only.complete(Boolean.TRUE);
            return;
        }
        String[] ids = distinctSorted(batch);
        execute("confirm", batch, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.confirmIds)) {
                ps.setArray(1, c.createArrayOf("text", ids));
                return ps.executeUpdate();
            }
        });
        for (IdRequest<Boolean> r : batch) {
            r.complete(Boolean.TRUE);
        }
    }

    private void confirmClaimBatch(List<ClaimRequest> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            ClaimRequest only = batch.get(0);
            only.complete(backend.confirmOne(only.claim));
            return;
        }
        Map<String, ClaimRequest> firstById = new LinkedHashMap<>();
        for (ClaimRequest r : batch) {
            firstById.putIfAbsent(r.id, r);
        }
        Set<String> held = runClaimArrays("confirm", batch, firstById.values(), sql.confirmClaims, 4,
                rs -> rs.getString(1));
        for (ClaimRequest r : batch) {
            boolean isFirst = firstById.get(r.id) == r;
            r.complete(isFirst && held.contains(r.id) && r.claim.claimed());
        }
    }

    private void releaseClaimBatch(List<ClaimRequest> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            ClaimRequest only = batch.get(0);
            only.complete(backend.releaseOne(only.claim));
            return;
        }
        Map<String, ClaimRequest> pairs = new LinkedHashMap<>(); // "attempt:id" -> first request naming that lease
        for (ClaimRequest r : batch) {
            pairs.putIfAbsent(r.claim.attempt() + ":" + r.id, r);
        }
        Set<String> released = runClaimArrays("release", batch, pairs.values(), sql.releaseClaims, 3,
                rs -> rs.getInt(2) + ":" + rs.getString(1));
        for (ClaimRequest r : batch) {
            String key = r.claim.attempt() + ":" + r.id;
            r.complete(pairs.get(key) == r && released.contains(key));
        }
    }

    // ------------------------------------------------------------------------------------------------ plumbing

    /** Reads the key of one result row. */
    @FunctionalInterface
    private interface RowKey {
        String of(ResultSet row) throws SQLException;
    }

    /**
     * Runs a statement over the claims of {@code distinct} (sorted by id, so locks are taken in id order) with the
     * parameters (ids[], attempts[], then the owner as parameters 3 to {@code ownerParameters}), and returns the keys
     * of the rows it returned.
     */
    private Set<String> runClaimArrays(String operation, List<ClaimRequest> batch, Collection<ClaimRequest> distinct,
                                       String statement, int ownerParameters, RowKey rowKey) {
        List<ClaimRequest> sorted = new ArrayList<>(distinct);
        sorted.sort(Comparator.comparing(r -> r.id));
        String[] ids = new String[sorted.size()];
        Integer[] attempts = new Integer[sorted.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = sorted.get(i).id;
            attempts[i] = sorted.get(i).claim.attempt();
        }
        return execute(operation, batch, c -> {
            try (PreparedStatement ps = c.prepareStatement(statement)) {
                ps.setArray(1, c.createArrayOf("text", ids));
                ps.setArray(2, c.createArrayOf("int4", attempts));
                for (int i = 3; i <= ownerParameters; i++) {
                    ps.setObject(i, owner);
                }
                Set<String> rows = new HashSet<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rows.add(rowKey.of(rs));
                    }
                }
                return rows;
            }
        });
    }

    /**
     * Runs one batch statement, retrying a deadlock victim; on failure answers every request with an exception of
     * its own and rethrows.
     */
    private <T, Q extends NamedRequest<?>> T execute(String operation, List<Q> batch, SqlCall<T> call) {
        for (int attempt = 0;; attempt++) {
            try {
                return backend.run(operation, call);
            } catch (StoreUnavailableException e) {
                if (attempt < RETRIES && e.getCause() instanceof SQLException s && retryable(s)) {
                    continue;
                }
                for (Q r : batch) {
                    r.fail(perCaller(operation, r.id, batch.size(), e));
                }
                throw e;
            }
        }
    }

    private static boolean retryable(SQLException e) {
        return "40P01".equals(e.getSQLState()) || "40001".equals(e.getSQLState());
    }

    private StoreUnavailableException perCaller(String operation, String id, int size, StoreUnavailableException e) {
        String shown = id.length() > 100 ? id.substring(0, 100) + "…" : id;
        String state = e.getCause() instanceof SQLException s ? " [SQLState " + s.getSQLState() + "]" : "";
        String cause = e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
        return new StoreUnavailableException("Idempotency store table " + table + ": " + operation + "('" + shown
                + "') failed" + state + " in a group-committed batch of " + size + " requests: " + cause,
                e.getCause() != null ? e.getCause() : e);
    }

    private static String[] distinctSorted(List<? extends NamedRequest<?>> batch) {
        return batch.stream().map(r -> r.id).distinct().sorted().toArray(String[]::new);
    }

    private static ClaimResult result(int code) {
        return switch (code) {
            case PostgresSql.CLAIMED -> ClaimResult.CLAIMED;
            case PostgresSql.ALREADY_CONFIRMED -> ClaimResult.ALREADY_CONFIRMED;
            case PostgresSql.IN_PROGRESS -> ClaimResult.IN_PROGRESS;
            default -> throw new IllegalStateException("Unexpected claim code " + code);
        };
    }

    private abstract class NamedRequest<R> extends GroupCommit.Request<R> {
        final String operation;
        final String id;

        NamedRequest(String operation, String id) {
            this.operation = operation;
            this.id = id;
        }

        @Override
        protected StoreUnavailableException interrupted(InterruptedException cause) {
            return new StoreUnavailableException("Idempotency store table " + table + ": " + operation + "('"
                    + (id.length() > 100 ? id.substring(0, 100) + "…" : id)
                    + "') was interrupted while waiting for its group-commit batch; nothing was written", cause);
        }
    }

    private final class IdRequest<R> extends NamedRequest<R> {
        IdRequest(String operation, String id) {
            super(operation, id);
        }
    }

    private final class ClaimRequest extends NamedRequest<Boolean> {
        final Claim claim;

        ClaimRequest(String operation, Claim claim) {
            super(operation, claim.messageId());
            this.claim = claim;
        }
    }

}

package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.MessageIds;
import org.acemq.amqp.api.StoreUnavailableException;

/**
 * Group commit for {@code JdbcIdempotencyStore}: {@code acquire}, {@code confirm(String)}, {@code confirm(Claim)}
 * and {@code release(Claim)} of concurrent callers are coalesced by a {@link GroupCommit} into one
 * {@link PostgresBatchSql} statement per batch (one lane per operation, a shared limit of batches in flight).
 *
 * <p><b>Each caller gets exactly the answer the single-id statement would have given it.</b> A batch of one request
 * runs the store's single-id statement itself. Larger batches run the array statements through
 * {@link BatchStatements}, which sends each id once and answers repeated ids as if the repeats had run one after the
 * other, right after the first, inside the same transaction.
 *
 * <p><b>Atomicity.</b> A batch is one autocommit statement: it commits completely or not at all. If it fails, every
 * caller in it gets a {@link StoreUnavailableException} of its own (naming its id and the batch) with the same
 * {@link SQLException} as cause, and nothing was written. A batch that PostgreSQL aborted as a deadlock victim
 * (SQLState 40P01) or a serialization failure (40001) had no effect and is retried up to {@value #RETRIES} times
 * before it fails. <b>One caller's id never fails the others:</b> a batch that PostgreSQL refuses for its data
 * (SQLState class 22, an id it cannot hold) wrote nothing, and each of its requests is then run again on its own with
 * the single-id statement, so the caller whose id is refused gets its {@code InvalidMessageIdException} and every other
 * caller its normal answer.
 */
public final class JdbcGroupCommit {

    /** How often a batch aborted as a deadlock victim (or serialization failure) is retried. */
    public static final int RETRIES = BatchStatements.RETRIES;

    /** What the group commit needs from the store: its single-id operations and its connection handling. */
    public interface Backend extends BatchStatements.Runner {
        /** @param id a valid id @param fingerprint a valid fingerprint or null @return the single-id acquire */
        Claim acquireOne(String id, String fingerprint);

        /** @param id a valid id */
        void confirmOne(String id);

        /** @param claim a claim with a valid id @return the single-id confirm(Claim) */
        boolean confirmOne(Claim claim);

        /** @param claim a CLAIMED claim with a valid id @return the single-id release(Claim) */
        boolean releaseOne(Claim claim);

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

    private final BatchStatements statements;
    private final Backend backend;
    private final String table;
    private final boolean arraySqlForSingletons;
    private final GroupCommit groupCommit;
    private final GroupCommit.Lane<AcquireRequest> acquireLane;
    private final GroupCommit.Lane<IdRequest<Boolean>> confirmIdLane;
    private final GroupCommit.Lane<ClaimRequest> confirmClaimLane;
    private final GroupCommit.Lane<ClaimRequest> releaseClaimLane;

    /**
     * @param statements the array statements
     * @param table the table name, for messages
     * @param maxBatch the most requests per statement
     * @param maxInFlight the most statements executing at once (over all four operations)
     * @param arraySqlForSingletons run a batch of one through the array statement too (tests only; normally a batch
     *     of one runs the single-id statement)
     * @param backend the store
     */
    public JdbcGroupCommit(BatchStatements statements, String table, int maxBatch, int maxInFlight,
            boolean arraySqlForSingletons, Backend backend) {
        this.statements = statements;
        this.table = table;
        this.backend = backend;
        this.arraySqlForSingletons = arraySqlForSingletons;
        this.groupCommit = new GroupCommit(maxBatch, maxInFlight);
        this.acquireLane = groupCommit.lane("acquire", this::acquireBatch);
        this.confirmIdLane = groupCommit.lane("confirm(String)", this::confirmIdBatch);
        this.confirmClaimLane = groupCommit.lane("confirm(Claim)", this::confirmClaimBatch);
        this.releaseClaimLane = groupCommit.lane("release(Claim)", this::releaseClaimBatch);
    }

    /**
     * @param id a valid id
     * @param fingerprint a valid fingerprint, or null
     * @return as {@code LeasedIdempotencyStore.acquire(String, String)}
     */
    public Claim acquire(String id, String fingerprint) {
        return acquireLane.submit(new AcquireRequest(id, fingerprint));
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

    private void acquireBatch(List<AcquireRequest> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            AcquireRequest only = batch.get(0);
            only.complete(backend.acquireOne(only.id, only.fingerprint));
            return;
        }
        Claim[] answers;
        try {
            List<String> prints = new ArrayList<>(batch.size());
            for (AcquireRequest r : batch) {
                prints.add(r.fingerprint);
            }
            answers = statements.acquire(backend, ids(batch), prints);
        } catch (StoreUnavailableException e) {
            failOrSplit("acquire", batch, e, r -> r.complete(backend.acquireOne(r.id, r.fingerprint)));
            return;
        }
        for (int i = 0; i < answers.length; i++) {
            batch.get(i).complete(answers[i]);
        }
    }

    private void confirmIdBatch(List<IdRequest<Boolean>> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            IdRequest<Boolean> only = batch.get(0);
            backend.confirmOne(only.id);
            only.complete(Boolean.TRUE);
            return;
        }
        try {
            statements.confirmIds(backend, ids(batch));
        } catch (StoreUnavailableException e) {
            failOrSplit("confirm", batch, e, r -> {
                backend.confirmOne(r.id);
                r.complete(Boolean.TRUE);
            });
            return;
        }
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
        boolean[] held;
        try {
            held = statements.confirmClaims(backend, claims(batch));
        } catch (StoreUnavailableException e) {
            failOrSplit("confirm", batch, e, r -> r.complete(backend.confirmOne(r.claim)));
            return;
        }
        for (int i = 0; i < held.length; i++) {
            batch.get(i).complete(held[i]);
        }
    }

    private void releaseClaimBatch(List<ClaimRequest> batch) {
        if (batch.size() == 1 && !arraySqlForSingletons) {
            ClaimRequest only = batch.get(0);
            only.complete(backend.releaseOne(only.claim));
            return;
        }
        boolean[] released;
        try {
            released = statements.releaseClaims(backend, claims(batch));
        } catch (StoreUnavailableException e) {
            failOrSplit("release", batch, e, r -> r.complete(backend.releaseOne(r.claim)));
            return;
        }
        for (int i = 0; i < released.length; i++) {
            batch.get(i).complete(released[i]);
        }
    }

    // ------------------------------------------------------------------------------------------------ plumbing

    private static List<String> ids(List<? extends NamedRequest<?>> batch) {
        List<String> ids = new ArrayList<>(batch.size());
        for (NamedRequest<?> r : batch) {
            ids.add(r.id);
        }
        return ids;
    }

    private static List<Claim> claims(List<ClaimRequest> batch) {
        List<Claim> claims = new ArrayList<>(batch.size());
        for (ClaimRequest r : batch) {
            claims.add(r.claim);
        }
        return claims;
    }

    /**
     * A batch statement failed and wrote nothing. If PostgreSQL refused its data, one request's id is to blame: every
     * request runs again on its own (single-id statement, in arrival order), so that only that caller fails. Otherwise
     * every caller gets an exception of its own naming its id and the batch.
     */
    private <Q extends NamedRequest<?>> void failOrSplit(String operation, List<Q> batch,
                                                          StoreUnavailableException e, Consumer<Q> alone) {
        if (statements.isDataError(e)) {
            for (Q r : batch) {
                try {
                    alone.accept(r);
                } catch (RuntimeException | Error failure) {
                    r.fail(failure);
                }
            }
            return;
        }
        for (Q r : batch) {
            r.fail(perCaller(operation, r.id, batch.size(), e));
        }
    }

    private StoreUnavailableException perCaller(String operation, String id, int size, StoreUnavailableException e) {
        String state = e.getCause() instanceof SQLException s ? " [SQLState " + s.getSQLState() + "]" : "";
        String cause = e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
        return new StoreUnavailableException("Idempotency store table " + table + ": " + operation + "('"
                + MessageIds.printable(id) + "') failed" + state + " in a group-committed batch of " + size
                + " requests: " + cause, e.getCause() != null ? e.getCause() : e);
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
                    + MessageIds.printable(id) + "') was interrupted while waiting for its group-commit batch; nothing was written", cause);
        }
    }

    private final class IdRequest<R> extends NamedRequest<R> {
        IdRequest(String operation, String id) {
            super(operation, id);
        }
    }

    private final class AcquireRequest extends NamedRequest<Claim> {
        final String fingerprint;

        AcquireRequest(String id, String fingerprint) {
            super("acquire", id);
            this.fingerprint = fingerprint;
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

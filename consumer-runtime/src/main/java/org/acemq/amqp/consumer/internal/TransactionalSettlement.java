package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.SendResult;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Ticker;
import org.apache.qpid.protonj2.client.DeliveryState;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.Transactional;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Transactional acknowledgement (AMQ-5456): every outcome is sent while an AMQP local transaction is declared on the
 * link's session, so it travels as {@code TransactionalState(txn-id, outcome)}; a committer thread discharges the
 * transaction when {@code batchSize} outcomes are enlisted or {@code batchTime} after the first one. Only a successful
 * discharge reports the batch as settled; after a rollback or a failed commit the deliveries are reported abandoned,
 * the broker redelivers them, and the store absorbs the copies (their work is confirmed).
 *
 * <p>Enlisting takes the read lock and the commit the write lock, so no outcome can slip out between a discharge and
 * the next declare, where protonj2 would send it as a plain, settled outcome.
 *
 * <p>A transaction dies with its connection or session. protonj2 nevertheless keeps it "declared" across a reconnect
 * and would send the next outcomes as {@code TransactionalState(stale txn-id, ...)}, and it refuses to declare a new
 * one. So an interruption marks the transaction stale: its deliveries are reported abandoned, it is rolled back
 * locally, and the first delivery settled on the new connection declares a new one. A session the broker ended is
 * replaced by a new one, on which the next transaction is declared.
 */
final class TransactionalSettlement implements Settlement {

    private static final Logger LOG = LoggerFactory.getLogger(TransactionalSettlement.class);

    /**
     * @param claim the claim to confirm once the transaction committed (its handler's sends went out in it), or null
     */
    private record Pending(Delivery delivery, Outcome outcome, SettleReason reason, org.acemq.amqp.api.Claim claim) {
    }

    private final String name;
    private final int batchSize;
    private final long batchNanos;
    private final Report report;
    private final OutcomePolicy policy;
    private final Ticker ticker;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final List<Pending> pending = new ArrayList<>();
    private long firstPendingNanos;
    private volatile Session session;
    private volatile boolean active;
    private volatile boolean stopped;
    private volatile boolean stale;
    /** A send of this transaction was not accepted: it must not commit. */
    private volatile boolean rollbackOnly;
    private Thread committer;
    private final StoreAccess store;
    private final java.time.Duration requestTimeout;
    /** Senders on the current session, by address; guarded by itself, emptied when the session changes. */
    private final java.util.Map<String, org.apache.qpid.protonj2.client.Sender> senders = new java.util.HashMap<>();

    /**
     * @param policy what is sent when no transaction can be declared ({@link OutcomePolicy#withoutTransaction})
     * @param ticker the consumer's clock: when the batch time of the first outcome enlisted is up
     */
    TransactionalSettlement(Report report, OutcomePolicy policy, Ticker ticker, int batchSize, Duration batchTime) {
        this(report, policy, ticker, batchSize, batchTime, null, Duration.ofSeconds(30));
    }

    /**
     * @param store where the claims of deliveries whose sends went out in a transaction are confirmed after its commit
     *     (or released after a rollback)
     * @param requestTimeout how long a send in the transaction may wait for the broker
     */
    TransactionalSettlement(Report report, OutcomePolicy policy, Ticker ticker, int batchSize, Duration batchTime,
                            StoreAccess store, Duration requestTimeout) {
        this.store = store;
        this.requestTimeout = requestTimeout;
        this.name = report.name();
        this.batchSize = batchSize;
        this.batchNanos = batchTime.toNanos();
        this.report = report;
        this.policy = policy;
        this.ticker = ticker;
    }

    @Override
    public void attached(ReceiverLink link) throws ClientException {
        lock.writeLock().lock();
        try {
            if (link.session != session) {
                abandon(drainPending());
                session = link.session;
                synchronized (senders) {
                    senders.clear();
                }
                stale = false;
                active = false;
                session.beginTransaction();
                active = true;
            }
        } finally {
            lock.writeLock().unlock();
        }
        synchronized (pending) {
            if (committer == null && !stopped) {
                committer = new Thread(this::commitLoop, name + "-committer");
                committer.setDaemon(true);
                committer.start();
            }
        }
    }

    @Override
    public boolean settle(Delivery d, Verdict v) {
        if (!d.live()) {
            // Arrived before a reconnect or re-attach: it can be settled nowhere; do not touch the transaction.
            releaseHeldClaim(d);
            return report.done(d, v.outcome(), v.reason(), false);
        }
        if (!active || stale || d.link().session != session) {
            ensureTransaction(d.link().session);
        }
        lock.readLock().lock();
        try {
            if (!active) {
                // No transaction could be declared: whatever goes out now is a plain, final disposition (nothing the
                // handler sent goes out: the message comes back and runs again)
                releaseHeldClaim(d);
                Verdict plain = policy.withoutTransaction(v);
                return report.done(d, plain.outcome(), plain.reason(),
                        d.link().send(d.arrival.amqp(), plain.outcome(), plain.condition(), plain.description()));
            }
            org.acemq.amqp.api.Claim confirmAfterCommit = null;
            if (d.sendsInTransaction && v.outcome() == Outcome.ACCEPTED) {
                if (!sendInTransaction(d)) {
                    releaseHeldClaim(d);
                    return report.done(d, v.outcome(), v.reason(), false);
                }
                confirmAfterCommit = d.claim;
            }
            if (!d.link().send(d.arrival.amqp(), v.outcome(), v.condition(), v.description())) {
                if (confirmAfterCommit != null) {
                    markRollbackOnly(); // its sends are in the transaction, its accept is not: neither may commit
                    releaseHeldClaim(d);
                }
                return report.done(d, v.outcome(), v.reason(), false);
            }
            synchronized (pending) {
                if (pending.isEmpty()) {
                    firstPendingNanos = ticker.read();
                    pending.notifyAll();
                }
                pending.add(new Pending(d, v.outcome(), v.reason(), confirmAfterCommit));
                if (pending.size() >= batchSize) {
                    pending.notifyAll();
                }
            }
            return true;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public void connectionInterrupted() {
        stale = true;
    }

    private void ensureTransaction(Session on) {
        lock.writeLock().lock();
        try {
            if (stale || on != session) {
                discardStaleTransaction();
                session = on;
                synchronized (senders) {
                    senders.clear();
                }
            }
            if (!active && !stopped) {
                session.beginTransaction();
                active = true;
            }
        } catch (ClientException e) {
            LOG.warn("Subscription '{}': cannot declare a transaction: {}", name, Errors.describe(e));
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Write lock held. Abandons what was enlisted in the dead transaction (the broker gives those messages back; the
     * store absorbs them) and rolls it back locally so that protonj2 lets us declare again.
     */
    private void discardStaleTransaction() {
        stale = false;
        abandon(drainPending());
        if (active) {
            try {
                session.rollbackTransaction();
            } catch (ClientException e) {
                LOG.debug("Subscription '{}': local rollback of the lost transaction: {}", name, Errors.describe(e));
            }
        }
        active = false;
    }

    private List<Pending> drainPending() {
        synchronized (pending) {
            List<Pending> batch = new ArrayList<>(pending);
            pending.clear();
            return batch;
        }
    }

    private void abandon(List<Pending> batch) {
        endClaims(batch, false);
        for (Pending p : batch) {
            report.done(p.delivery(), p.outcome(), p.reason(), false);
        }
    }

    /**
     * Sends what the delivery's handler sent on the transaction's session, each waited for until the broker accepted
     * it in the transaction. One that is not makes the transaction roll back (its other sends must not commit).
     *
     * @return whether all were accepted
     */
    private boolean sendInTransaction(Delivery d) {
        List<Outbound> sends = d.envelope().sends();
        long started = ticker.read();
        long deadline = System.nanoTime() + requestTimeout.toNanos();
        int answered = 0;
        try {
            List<org.apache.qpid.protonj2.client.Tracker> trackers = new ArrayList<>(sends.size());
            for (Outbound out : sends) {
                trackers.add(sender(out.address()).send(out.message()));
            }
            for (int i = 0; i < trackers.size(); i++) {
                org.apache.qpid.protonj2.client.Tracker t = trackers.get(i);
                t.awaitSettlement(Math.max(1, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS);
                DeliveryState state = t.remoteState();
                if (state instanceof Transactional ts) {
                    state = ts.getOutcome();
                }
                if (state == null || !state.isAccepted()) {
                    throw new SendFailedException("message " + sends.get(i).messageId() + " to '"
                            + sends.get(i).address() + "' was not accepted in the transaction: " + t.remoteState(),
                            state != null && state.isRejected(), null);
                }
                reportSent(SendResult.ACCEPTED, started);
                answered++;
            }
            return true;
        } catch (ClientException | RuntimeException e) {
            LOG.warn("Subscription '{}': what the handler of {} sent could not be sent in the transaction ({}); the "
                    + "transaction is rolled back and the message runs again", name, d.logId(), Errors.describe(e));
            // the one that failed, and those never answered: none of them is sent (the transaction rolls back)
            SendResult failed = e instanceof SendFailedException f ? f.result() : SendResult.FAILED;
            for (int i = answered; i < sends.size(); i++) {
                reportSent(i == answered ? failed : SendResult.FAILED, started);
            }
            markRollbackOnly();
            return false;
        }
    }

    private void reportSent(SendResult result, long started) {
        report.observer().sent(SendPath.TRANSACTION, result, ticker.read() - started);
    }

    private org.apache.qpid.protonj2.client.Sender sender(String address) throws ClientException {
        synchronized (senders) {
            org.apache.qpid.protonj2.client.Sender s = senders.get(address);
            if (s == null) {
                s = session.openSender(address, new org.apache.qpid.protonj2.client.SenderOptions()
                        .openTimeout(requestTimeout.toMillis()).sendTimeout(requestTimeout.toMillis()));
                senders.put(address, s);
            }
            return s;
        }
    }

    /** The transaction must not commit: the committer rolls it back now. */
    private void markRollbackOnly() {
        synchronized (pending) {
            rollbackOnly = true;
            pending.notifyAll();
        }
    }

    /** Confirms (after a commit) or releases the claims of deliveries whose sends went out in the transaction. */
    private void endClaims(List<Pending> batch, boolean committed) {
        List<org.acemq.amqp.api.Claim> claims = new ArrayList<>();
        for (Pending p : batch) {
            if (p.claim() != null) {
                claims.add(p.claim());
                p.delivery().unclaimed();
            }
        }
        if (claims.isEmpty() || store == null) {
            return;
        }
        try {
            if (committed) {
                store.confirmAll(claims);
            } else {
                store.releaseAll(claims);
            }
        } catch (RuntimeException e) {
            LOG.error("Subscription '{}': could not {} {} claim(s) after the transaction ({}); {}", name,
                    committed ? "confirm" : "release", claims.size(), Errors.describe(e), committed
                            ? "a later copy of those messages may run again" : "they free when their leases expire");
        }
    }

    /** A delivery whose claim was to end after the transaction: released now (nothing of it was committed). */
    private void releaseHeldClaim(Delivery d) {
        org.acemq.amqp.api.Claim claim = d.claim;
        if (!d.sendsInTransaction || claim == null || store == null) {
            return;
        }
        d.unclaimed();
        try {
            store.releaseAll(List.of(claim));
        } catch (RuntimeException e) {
            LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                    d.logId(), Errors.describe(e));
        }
    }

    private void commitLoop() {
        while (!stopped) {
            synchronized (pending) {
                try {
                    while (!stopped && !rollbackOnly && (pending.isEmpty()
                            || (pending.size() < batchSize && ticker.read() - firstPendingNanos < batchNanos))) {
                        if (pending.isEmpty()) {
                            pending.wait();
                        } else {
                            long waitNanos = batchNanos - (ticker.read() - firstPendingNanos);
                            if (waitNanos > 0) {
                                pending.wait(Math.max(1, waitNanos / 1_000_000), (int) (waitNanos % 1_000_000));
                            }
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (!stopped) {
                commitNow(true);
            }
        }
    }

    /** Discharges the current transaction with what is enlisted, and declares the next one if asked. */
    private void commitNow(boolean beginNext) {
        lock.writeLock().lock();
        try {
            List<Pending> batch = drainPending();
            if (batch.isEmpty() && beginNext && !rollbackOnly) {
                return;
            }
            if (stale) {
                // The transaction died with the connection: committing it cannot succeed, and declaring the next one
                // has to wait for the new connection (the next enlist does it).
                LOG.warn("Subscription '{}': the transaction of {} deliveries was lost with the connection; the broker "
                        + "will redeliver them and the store will absorb the copies", name, batch.size());
                abandon(batch);
                return;
            }
            boolean committed = false;
            if (active) {
                try {
                    if (rollbackOnly) {
                        session.rollbackTransaction();
                        LOG.warn("Subscription '{}': a message a handler sent was not accepted in the transaction of {} "
                                + "deliveries; it was rolled back, the broker will redeliver them", name, batch.size());
                    } else {
                        session.commitTransaction();
                        committed = true;
                    }
                } catch (ClientException e) {
                    LOG.warn("Subscription '{}': commit of {} deliveries failed, the broker will redeliver them and "
                            + "the store will absorb the copies: {}", name, batch.size(), Errors.describe(e));
                }
                active = false;
                rollbackOnly = false;
            }
            endClaims(batch, committed);
            for (Pending p : batch) {
                report.done(p.delivery(), p.outcome(), p.reason(), committed);
            }
            if (beginNext && !stopped && session != null) {
                try {
                    session.beginTransaction();
                    active = true;
                } catch (ClientException e) {
                    LOG.warn("Subscription '{}': cannot declare the next transaction: {}", name, Errors.describe(e));
                }
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** Commits what is enlisted and stops; called after the handlers finished. */
    @Override
    public void stop() {
        stopped = true;
        Thread c;
        synchronized (pending) {
            pending.notifyAll();
            c = committer;
        }
        if (c != null) {
            try {
                c.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        commitNow(false);
    }
}

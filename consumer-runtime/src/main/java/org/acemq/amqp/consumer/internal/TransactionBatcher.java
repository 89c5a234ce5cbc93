package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Transactional acknowledgement (AMQ-5456): every disposition of a subscription is sent while an AMQP local
 * transaction is declared on its session, so it travels as {@code TransactionalState(txn-id, outcome)}; a committer
 * discharges the transaction when {@code batchSize} deliveries are enlisted or {@code batchTime} after the first one.
 * Only a successful discharge reports the batch as settled; after a rollback or a failed commit the deliveries are
 * reported abandoned, the broker redelivers them, and the store absorbs the copies (their work is confirmed).
 *
 * <p>Dispositions take the read lock and the commit takes the write lock, so no disposition can slip out between a
 * discharge and the next declare, where protonj2 would send it as a plain, settled outcome.
 *
 * <p>A transaction dies with its connection. protonj2 nevertheless keeps it "declared" across a reconnect and would
 * send the next outcomes as {@code TransactionalState(stale txn-id, ...)} on the new connection, and it refuses to
 * declare a new one. So a connection interruption marks the transaction stale: its deliveries are reported
 * abandoned, it is rolled back locally, and the first delivery settled on the new connection declares a new one.
 */
final class TransactionBatcher {

    private static final Logger LOG = LoggerFactory.getLogger(TransactionBatcher.class);

    private record Pending(DeliveryTask task, Outcome outcome, SettleReason reason) {
    }

    private final SubscriptionRunner runner;
    private final Session session;
    private final int batchSize;
    private final long batchNanos;
    private final ConsumerObserver observer;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final List<Pending> pending = new ArrayList<>();
    private long firstPendingNanos;
    private volatile boolean active;
    private volatile boolean stopped;
    private volatile boolean stale;
    private Thread committer;

    TransactionBatcher(SubscriptionRunner runner, Session session, int batchSize, Duration batchTime,
                       ConsumerObserver observer) {
        this.runner = runner;
        this.session = session;
        this.batchSize = batchSize;
        this.batchNanos = batchTime.toNanos();
        this.observer = observer;
    }

    void start() throws ClientException {
        session.beginTransaction();
        active = true;
        committer = new Thread(this::commitLoop, runner.name + "-committer");
        committer.setDaemon(true);
        committer.start();
    }

    void enlist(DeliveryTask task, Outcome outcome, SettleReason reason, String condition, String description) {
        if (!runner.isCurrent(task)) {
            // Arrived before a reconnect or re-attach: it can be settled nowhere; do not touch the transaction.
            observer.abandoned(runner.name);
            runner.finished(task);
            return;
        }
        if (!active || stale) {
            ensureTransaction();
        }
        lock.readLock().lock();
        try {
            if (!active) {
                // No transaction could be declared. A plain release is always safe: the message comes back and the
                // store decides again. Never send a plain accept here.
                boolean sent = runner.sendDisposition(task, Outcome.RELEASED, null, null);
                if (sent) {
                    observer.settled(runner.name, Outcome.RELEASED, reason);
                } else {
                    observer.abandoned(runner.name);
                }
                runner.finished(task);
                return;
            }
            if (!runner.sendDisposition(task, outcome, condition, description)) {
                observer.abandoned(runner.name);
                runner.finished(task);
                return;
            }
            synchronized (pending) {
                if (pending.isEmpty()) {
                    firstPendingNanos = System.nanoTime();
                    pending.notifyAll();
                }
                pending.add(new Pending(task, outcome, reason));
                if (pending.size() >= batchSize) {
                    pending.notifyAll();
                }
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /** The connection was interrupted: the declared transaction is gone on the broker side. */
    void connectionInterrupted() {
        stale = true;
    }

    private void ensureTransaction() {
        lock.writeLock().lock();
        try {
            if (stale) {
                discardStaleTransaction();
            }
            if (!active && !stopped) {
                session.beginTransaction();
                active = true;
            }
        } catch (ClientException e) {
            LOG.warn("Subscription '{}': cannot declare a transaction: {}", runner.name, Errors.describe(e));
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Write lock held, on the new connection. Abandons what was enlisted in the dead transaction (the broker gives
     * those messages back; the store absorbs them) and rolls it back locally so that protonj2 lets us declare again.
     */
    private void discardStaleTransaction() {
        stale = false;
        abandon(drainPending());
        try {
            session.rollbackTransaction();
        } catch (ClientException e) {
            LOG.debug("Subscription '{}': local rollback of the transaction of the lost connection: {}", runner.name,
                    Errors.describe(e));
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
        for (Pending p : batch) {
            observer.abandoned(runner.name);
            runner.finished(p.task());
        }
    }

    private void commitLoop() {
        while (!stopped) {
            synchronized (pending) {
                try {
                    while (!stopped && (pending.isEmpty()
                            || (pending.size() < batchSize && System.nanoTime() - firstPendingNanos < batchNanos))) {
                        if (pending.isEmpty()) {
                            pending.wait();
                        } else {
                            long waitNanos = batchNanos - (System.nanoTime() - firstPendingNanos);
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
            if (batch.isEmpty() && beginNext) {
                return;
            }
            if (stale) {
                // The transaction died with the connection: committing it cannot succeed, and declaring the next
                // one has to wait for the new connection (the next enlist does it).
                LOG.warn("Subscription '{}': the transaction of {} deliveries was lost with the connection; the broker "
                        + "will redeliver them and the store will absorb the copies", runner.name, batch.size());
                abandon(batch);
                return;
            }
            boolean committed = false;
            if (active) {
                try {
                    session.commitTransaction();
                    committed = true;
                } catch (ClientException e) {
                    LOG.warn("Subscription '{}': commit of {} deliveries failed, the broker will redeliver them and "
                            + "the store will absorb the copies: {}", runner.name, batch.size(), Errors.describe(e));
                }
                active = false;
            }
            for (Pending p : batch) {
                if (committed) {
                    observer.settled(runner.name, p.outcome(), p.reason());
                } else {
                    observer.abandoned(runner.name);
                }
                runner.finished(p.task());
            }
            if (beginNext && !stopped) {
                try {
                    session.beginTransaction();
                    active = true;
                } catch (ClientException e) {
                    LOG.warn("Subscription '{}': cannot declare the next transaction: {}", runner.name,
                            Errors.describe(e));
                }
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** Commits what is enlisted and stops; called after the handlers finished. */
    void stop() {
        stopped = true;
        synchronized (pending) {
            pending.notifyAll();
        }
        if (committer != null) {
            try {
                committer.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        commitNow(false);
    }
}

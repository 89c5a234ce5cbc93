package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ClaimStatus;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.DeliveryMode;
import org.apache.qpid.protonj2.client.DeliveryState;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientIOException;
import org.apache.qpid.protonj2.client.exceptions.ClientLinkRemotelyClosedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one subscription: its receiver, its handler threads, its control thread and its credit.
 *
 * <h2>Threads</h2>
 * Each of the {@code concurrency} handler threads takes the next delivery from the receiver itself and processes it
 * (no queue and no hand-off between threads on the way). The control thread re-attaches a lost link and drains idle
 * credit; to drain or to stop it interrupts the handler threads that are blocked in {@code receive()}, and only
 * those (see {@link #pullLoop}).
 *
 * <h2>Credit</h2>
 * The receiver has creditWindow 0: protonj2 grants nothing by itself. {@code credit} counts credit granted and not
 * yet taken by a handler thread (it includes deliveries queued in the client); {@code held} counts deliveries taken
 * and not yet finished. Credit is granted only while {@code held + credit < maxInFlight}, so a slow handler stops the
 * flow instead of filling a queue. Aborted transfers consume broker credit invisibly, and payload-less frames can
 * leave a session window closed until some link flow is written; both are repaired by draining a link that has been
 * idle with credit outstanding and re-granting from the drained state.
 */
final class SubscriptionRunner {

    private static final Logger LOG = LoggerFactory.getLogger(SubscriptionRunner.class);
    private static final long MAX_POLL_MILLIS = 200;
    private static final Duration MAX_REATTACH_DELAY = Duration.ofSeconds(30);
    private static final Duration FIRST_REATTACH_DELAY = Duration.ofMillis(100);
    private static final int MAX_DESCRIPTION = 512;
    private static final long FINAL_DRAIN_MILLIS = 5_000;

    final Subscription spec;
    final String name;
    private final ConsumerRuntime runtime;
    private final Session session;
    private final ConsumerObserver observer;
    private final int budget;
    private final int threshold;

    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled when handler threads may take deliveries again (a link is attached and no drain is counting). */
    private final Condition intakeOpen = lock.newCondition();
    /** Signalled when the last handler thread has left {@code receive()} while a drain or a stop waits for it. */
    private final Condition quiet = lock.newCondition();
    /** Handler threads inside {@code receive()} (guarded by {@code lock}; read without it only to interrupt them). */
    private final Set<Thread> receiving = ConcurrentHashMap.newKeySet();
    private final long pollMillis;
    /** Deliveries the control thread took while every handler thread was busy (guarded by {@code lock}). */
    private final ArrayDeque<DeliveryTask> pending = new ArrayDeque<>();
    private int held;
    private int credit;
    private boolean draining;

    private volatile Receiver receiver;
    private volatile long linkGeneration;
    private volatile boolean stopping;
    private volatile boolean resyncRequested;
    private volatile long lastActivityNanos = System.nanoTime();
    private volatile String lastError;

    private final ThreadPoolExecutor workers;
    private final Map<DeliveryTask, Boolean> inFlight = new ConcurrentHashMap<>();
    private final Map<DeliveryTask, Hold> holds = new ConcurrentHashMap<>();
    private final CountDownLatch stopSignal = new CountDownLatch(1);
    private final TransactionBatcher transactions;
    private Thread control;
    private long reattachDelayMillis = FIRST_REATTACH_DELAY.toMillis();

    private record Hold(ScheduledFuture<?> future, Runnable settle) {
    }

    SubscriptionRunner(ConsumerRuntime runtime, Subscription spec, Session session) {
        this.runtime = runtime;
        this.spec = spec;
        this.name = spec.name();
        this.session = session;
        this.observer = runtime.observer();
        this.budget = spec.maxInFlight();
        this.threshold = Math.max(1, budget / 4);
        this.pollMillis = Math.max(1, Math.min(MAX_POLL_MILLIS, runtime.config().creditCheckInterval().toMillis()));
        AtomicInteger count = new AtomicInteger();
        String prefix = runtime.name() + "-" + name + "-worker-";
        this.workers = new ThreadPoolExecutor(spec.concurrency(), spec.concurrency(), 0, TimeUnit.MILLISECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, prefix + count.incrementAndGet());
                    t.setDaemon(false);
                    return t;
                });
        this.transactions = spec.acknowledgementMode() == AcknowledgementMode.TRANSACTIONAL
                ? new TransactionBatcher(this, session, spec.transactionBatchSize(), spec.transactionBatchTime(),
                        observer)
                : null;
    }

    // ------------------------------------------------------------------ lifecycle

    void start() throws ClientException {
        Receiver r = openReceiver();
        lock.lock();
        try {
            linkGeneration++;
            receiver = r;
        } finally {
            lock.unlock();
        }
        // The idle period counts from now, not from construction: a slow attach must not make the control thread
        // drain the link before its first grant.
        lastActivityNanos = System.nanoTime();
        if (transactions != null) {
            transactions.start();
        }
        control = new Thread(this::controlLoop, runtime.name() + "-" + name + "-control");
        control.setDaemon(true);
        control.start();
        for (int i = 0; i < spec.concurrency(); i++) {
            workers.execute(this::pullLoop);
        }
        tryGrant();
    }

    private Receiver openReceiver() throws ClientException {
        // A fresh options object every time: protonj2 keeps a live reference to it, and its copies drop the
        // source's default-outcome and outcomes.
        ReceiverOptions options = new ReceiverOptions();
        options.autoAccept(false);
        options.creditWindow(0);
        options.openTimeout(runtime.config().connection().openTimeout().toMillis());
        options.drainTimeout(runtime.config().connection().requestTimeout().toMillis());
        if (spec.linkName() != null) {
            options.linkName(spec.linkName());
        }
        if (spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE) {
            options.deliveryMode(DeliveryMode.AT_MOST_ONCE);
            // QPID-8345: a broker must apply the default outcome to pre-settled deliveries; accepted means "gone".
            options.sourceOptions().defaultOutcome(DeliveryState.accepted());
            options.sourceOptions().outcomes(DeliveryState.Type.ACCEPTED);
        } else {
            options.deliveryMode(DeliveryMode.AT_LEAST_ONCE);
            // Deliveries still unsettled when the link ends go back without counting an attempt: our store counts
            // attempts; the broker counting them too would dead-letter prefetched messages that never ran.
            options.sourceOptions().defaultOutcome(DeliveryState.released());
            options.sourceOptions().outcomes(DeliveryState.Type.ACCEPTED, DeliveryState.Type.REJECTED,
                    DeliveryState.Type.RELEASED, DeliveryState.Type.MODIFIED);
        }
        Receiver r = session.openReceiver(spec.address(), options);
        try {
            r.openFuture().get(runtime.config().connection().openTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            r.close();
            throw new ClientException("interrupted while attaching to " + spec.address());
        } catch (ExecutionException | TimeoutException e) {
            r.close();
            throw Errors.clientException(e);
        }
        lastError = null;
        return r;
    }

    // ------------------------------------------------------------------ intake

    /**
     * The control loop (one thread per subscription): re-attaches a lost link and drains/re-counts idle credit. It
     * never touches a delivery: the handler threads take deliveries from the receiver themselves ({@link #pullLoop}).
     */
    private void controlLoop() {
        long idleNanos = runtime.config().creditCheckInterval().toNanos();
        while (!stopping) {
            Receiver r = receiver;
            try {
                if (r == null) {
                    reattach();
                    continue;
                }
                if (resyncRequested || (System.nanoTime() - lastActivityNanos >= idleNanos && creditIdle(r))) {
                    resync(r);
                    continue;
                }
                if (receiving.isEmpty()) {
                    probeLink(r);
                }
                if (stopSignal.await(pollMillis, TimeUnit.MILLISECONDS)) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (ClientIOException e) {
                if (!stopping) {
                    lastError = "connection: " + Errors.describe(e);
                    runtime.connectionFailed(e);
                }
                return;
            } catch (ClientException e) {
                if (!stopping) {
                    linkLost(r, e);
                }
            } catch (RuntimeException e) {
                LOG.error("Control loop of subscription '{}' failed unexpectedly; re-attaching", name, e);
                if (!stopping) {
                    linkLost(r, e);
                }
            }
        }
    }

    /**
     * What each handler thread runs until the subscription stops: take the next delivery from the receiver, process
     * it, repeat. Taking it on the thread that runs the handler costs no hand-off between threads (the client's I/O
     * thread hands the delivery straight to a waiting handler thread, as for a bare protonj2 receiver).
     */
    private void pullLoop() {
        Thread me = Thread.currentThread();
        while (true) {
            Receiver r;
            DeliveryTask taken;
            lock.lock();
            try {
                while (!stopping && pending.isEmpty() && (receiver == null || draining)) {
                    intakeOpen.awaitUninterruptibly();
                }
                if (stopping) {
                    return;
                }
                r = receiver;
                taken = pending.pollFirst();
                if (taken == null) {
                    receiving.add(me);
                }
            } finally {
                lock.unlock();
            }
            if (taken != null) {
                processGuarded(taken);
                continue;
            }
            org.apache.qpid.protonj2.client.Delivery delivery = null;
            ClientException failure = null;
            RuntimeException unexpected = null;
            try {
                delivery = r.receive(pollMillis, TimeUnit.MILLISECONDS);
            } catch (ClientException e) {
                failure = e;
            } catch (RuntimeException e) {
                unexpected = e;
            }
            boolean creditExhausted = false;
            lock.lock();
            try {
                receiving.remove(me);
                if (delivery != null) {
                    creditExhausted = countTakenLocked();
                }
                if (receiving.isEmpty() && (draining || stopping)) {
                    quiet.signalAll();
                }
            } finally {
                lock.unlock();
            }
            // No interrupt is sent once this thread left the receiving set under the lock; clear one that came
            // in between (it was meant for the receive, which has returned).
            Thread.interrupted();
            if (delivery != null) {
                lastActivityNanos = System.nanoTime();
                DeliveryTask task = track(delivery);
                if (creditExhausted) {
                    // Free slots below the top-up threshold are granted as soon as no credit is left, not only when
                    // the next delivery finishes.
                    tryGrant();
                }
                processGuarded(task);
            } else if (failure != null) {
                receiveFailed(r, failure);
            } else if (unexpected != null) {
                LOG.error("Receiving on subscription '{}' failed unexpectedly; re-attaching", name, unexpected);
                if (!stopping) {
                    linkLost(r, unexpected);
                }
            }
        }
    }

    /** Keeps this handler thread alive whatever escapes {@link #process} (it settles every failure itself). */
    private void processGuarded(DeliveryTask task) {
        try {
            process(task);
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': a delivery could not be processed or settled", name, e);
        }
    }

    private void receiveFailed(Receiver r, ClientException e) {
        if (stopping || e.getCause() instanceof InterruptedException) {
            return; // woken on purpose: to stop, or to let a drain re-count credit
        }
        if (e instanceof ClientIOException) {
            lastError = "connection: " + Errors.describe(e);
            runtime.connectionFailed(e);
            lock.lock();
            try {
                stopping = true; // the connection is gone for good: no receive can succeed any more
                intakeOpen.signalAll();
            } finally {
                lock.unlock();
            }
            return;
        }
        linkLost(r, e);
    }

    /**
     * Every handler thread is busy, so no receive() would notice a detach now: look at the link. tryReceive fails on
     * a link the broker closed and writes nothing (unlike addCredit(0), whose flow would re-open the session window
     * for this link only). A delivery it returns is counted and left for the next free handler thread; taken under
     * the lock, and only while no handler thread is receiving, so it is still handled before any later one.
     */
    private void probeLink(Receiver r) throws ClientException {
        boolean creditExhausted = false;
        lock.lock();
        try {
            if (!receiving.isEmpty() || !pending.isEmpty() || draining || stopping || receiver != r) {
                return; // a handler thread is receiving (it will notice), or one delivery is already set aside
            }
            org.apache.qpid.protonj2.client.Delivery d = r.tryReceive();
            if (d == null) {
                return;
            }
            lastActivityNanos = System.nanoTime();
            creditExhausted = countTakenLocked();
            pending.addLast(track(d));
            intakeOpen.signal();
        } finally {
            lock.unlock();
        }
        if (creditExhausted) {
            tryGrant();
        }
    }

    /** Under no lock: interrupts every handler thread blocked in {@code receive}, so that it returns now. */
    private void wakeReceivers() {
        for (Thread t : receiving) {
            t.interrupt();
        }
    }

    /** @return whether the link holds credit the broker has not used: granted, and not queued in the client */
    private boolean creditIdle(Receiver r) throws ClientException {
        long queued = r.queuedDeliveries();
        lock.lock();
        try {
            return credit > queued;
        } finally {
            lock.unlock();
        }
    }

    /** Tracks a delivery already counted as held until {@link #finished(DeliveryTask)}. */
    private DeliveryTask track(org.apache.qpid.protonj2.client.Delivery delivery) {
        DeliveryTask task = new DeliveryTask(this, delivery, runtime.connectionGeneration(), linkGeneration);
        inFlight.put(task, Boolean.TRUE);
        return task;
    }

    /**
     * Under {@code lock}: moves one delivery taken from the client from credit to held.
     *
     * @return whether that used up the link's credit
     */
    private boolean countTakenLocked() {
        credit = Math.max(0, credit - 1);
        held++;
        return credit == 0;
    }

    /** Moves a received delivery from credit to held and tracks it until {@link #finished(DeliveryTask)}. */
    private DeliveryTask take(org.apache.qpid.protonj2.client.Delivery delivery) {
        lock.lock();
        try {
            countTakenLocked();
        } finally {
            lock.unlock();
        }
        return track(delivery);
    }

    /**
     * Drains the link (the broker uses up or cancels its credit and says so), then counts credit again from what is
     * really outstanding: only the deliveries already queued in the client. Fixes credit silently consumed by
     * aborted transfers, and writes a link flow that re-opens a stalled session window.
     */
    private void resync(Receiver r) throws ClientException {
        resyncRequested = false;
        lock.lock();
        try {
            draining = true;
            wakeReceivers();
        } finally {
            lock.unlock();
        }
        try {
            r.drain().get(runtime.config().connection().requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.debug("Drain of '{}' did not complete: {}", name, Errors.describe(e));
            ClientException cause = Errors.clientException(e);
            if (cause instanceof ClientLinkRemotelyClosedException || cause instanceof ClientIOException) {
                lock.lock();
                try {
                    draining = false;
                    intakeOpen.signalAll();
                } finally {
                    lock.unlock();
                }
                throw cause;
            }
        } finally {
            lock.lock();
            try {
                // Count only once no handler thread is between taking a delivery from the client's queue and
                // counting it; the ones blocked in receive() were interrupted above and return at once.
                while (!receiving.isEmpty() && !stopping) {
                    wakeReceivers();
                    quiet.await(10, TimeUnit.MILLISECONDS);
                }
                if (draining) {
                    int queued = (int) Math.min(Integer.MAX_VALUE, r.queuedDeliveries());
                    int outstanding = Math.min(credit, queued);
                    runtime.budget().release(credit - outstanding);
                    credit = outstanding;
                    draining = false;
                    intakeOpen.signalAll();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                draining = false;
                intakeOpen.signalAll();
            } finally {
                lock.unlock();
            }
            lastActivityNanos = System.nanoTime();
        }
        tryGrant();
    }

    /** The link of {@code r} is gone (once per link, from whichever thread noticed first): re-attach. */
    private void linkLost(Receiver r, Exception e) {
        lock.lock();
        try {
            if (r == null || receiver != r) {
                return; // already handled
            }
            linkGeneration++;
            receiver = null;
            runtime.budget().release(credit);
            credit = 0;
        } finally {
            lock.unlock();
        }
        lastError = "link: " + Errors.describe(e);
        LOG.warn("Link of subscription '{}' to '{}' was closed: {}; re-attaching", name, spec.address(), lastError);
        try {
            r.close();
        } catch (RuntimeException ignored) {
            // already closed by the peer
        }
    }

    private void reattach() {
        try {
            if (stopSignal.await(reattachDelayMillis, TimeUnit.MILLISECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        try {
            Receiver r = openReceiver();
            lock.lock();
            try {
                linkGeneration++;
                receiver = r;
                intakeOpen.signalAll();
            } finally {
                lock.unlock();
            }
            reattachDelayMillis = FIRST_REATTACH_DELAY.toMillis();
            LOG.info("Subscription '{}' re-attached to '{}'", name, spec.address());
            lastActivityNanos = System.nanoTime();
            tryGrant();
        } catch (ClientException e) {
            lastError = "link: " + Errors.describe(e);
            reattachDelayMillis = Math.min(reattachDelayMillis * 2, MAX_REATTACH_DELAY.toMillis());
            LOG.warn("Re-attaching subscription '{}' failed: {}; next try in {} ms", name, lastError,
                    reattachDelayMillis);
        }
    }

    /** Called after the connection came back: protonj2 re-attached the link; re-count its credit. */
    void connectionRestored() {
        resyncRequested = true;
    }

    // ------------------------------------------------------------------ credit

    void tryGrant() {
        Receiver r = receiver;
        if (r == null || stopping || runtime.paused()) {
            return;
        }
        lock.lock();
        try {
            grantLocked(r);
        } finally {
            lock.unlock();
        }
    }

    /** Under {@code lock}: grants the free part of the budget to {@code r} if that is worth a flow now. */
    private void grantLocked(Receiver r) {
        if (draining || r != receiver || stopping || runtime.paused()) {
            return;
        }
        int free = budget - held - credit;
        if (free <= 0 || (free < threshold && credit > 0)) {
            // Below the top-up threshold, grant only when the link has no credit left (credit counts the
            // deliveries queued in the client too, so a backlog waiting for a handler keeps it above 0): the
            // slots are collected into one larger grant instead of one flow (and one I/O-thread round trip)
            // per delivery.
            return;
        }
        int grant = runtime.budget().acquire(free);
        if (grant <= 0) {
            return;
        }
        try {
            r.addCredit(grant);
            credit += grant;
            // Fresh credit is not idle credit: the idle period that triggers a drain starts now, so a drain
            // never races the broker's first use of a grant (e.g. after a slow attach).
            lastActivityNanos = System.nanoTime();
        } catch (ClientException e) {
            runtime.budget().release(grant);
            resyncRequested = true;
            LOG.debug("Granting credit to '{}' failed: {}", name, Errors.describe(e));
        }
    }

    /** The store became unreachable: stop the flow; {@link #tryGrant()} refuses while paused. */
    void pause() {
        resyncRequested = true;
    }

    /** Frees the delivery's slot (once); for transactional settles, called after the discharge. */
    void finished(DeliveryTask task) {
        if (!task.markFinished()) {
            return;
        }
        task.claimedNanos = 0;
        inFlight.remove(task);
        if (runtime.budget().limited()) {
            lock.lock();
            try {
                held--;
            } finally {
                lock.unlock();
            }
            runtime.budget().release(1);
            runtime.capacityFreed(this); // the freed capacity may go to another subscription
            return;
        }
        Receiver r = receiver;
        lock.lock();
        try {
            held--;
            if (r != null) {
                grantLocked(r); // one lock acquisition per finished delivery
            }
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ the per-delivery algorithm

    void process(DeliveryTask task) {
        try {
            // At-most-once deliveries arrive settled: they cannot go back, so even while stopping they are handled.
            if (stopping && spec.acknowledgementMode() != AcknowledgementMode.AT_MOST_ONCE) {
                settle(task, Outcome.RELEASED, SettleReason.SHUTDOWN, null, null);
                return;
            }
            Message<?> message;
            String key;
            try {
                message = task.delivery.message();
                key = keyFor(message);
            } catch (ClientException | RuntimeException e) {
                LOG.warn("Subscription '{}': rejecting a delivery that cannot be decoded: {}", name,
                        Errors.describe(e));
                settle(task, Outcome.REJECTED, SettleReason.UNDECODABLE, EnvelopeImpl.DECODE_ERROR,
                        "message cannot be decoded: " + Errors.describe(e));
                return;
            }
            if (key == null) {
                settle(task, Outcome.REJECTED, SettleReason.MISSING_ID, MissingIdPolicy.MISSING_ID_CONDITION,
                        "message has no message-id" + (spec.missingIdPolicy().kind() == MissingIdPolicy.Kind.REJECT
                                ? "" : " and no '" + spec.missingIdPolicy().property() + "' application property"));
                return;
            }
            if (spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE) {
                processAtMostOnce(task, message, key);
                return;
            }
            if (runtime.paused()) {
                settle(task, Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE, null, null);
                return;
            }
            Claim claim;
            try {
                claim = runtime.store().acquire(key);
                runtime.gate().success();
            } catch (RuntimeException e) {
                observer.claim(name, ClaimStatus.ERROR);
                runtime.gate().failure(e);
                if (runtime.config().storeFailurePolicy() == StoreFailurePolicy.FAIL_OPEN) {
                    observer.storeBypassed(name);
                    runUnclaimed(task, message, key);
                } else {
                    settle(task, Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE, null, null);
                }
                return;
            }
            switch (claim.result()) {
                case ALREADY_CONFIRMED -> {
                    observer.claim(name, ClaimStatus.ALREADY_CONFIRMED);
                    settle(task, Outcome.ACCEPTED, SettleReason.DUPLICATE, null, null);
                }
                case IN_PROGRESS -> {
                    observer.claim(name, ClaimStatus.IN_PROGRESS);
                    hold(task, spec.inProgressDelay(), Outcome.RELEASED, SettleReason.IN_PROGRESS);
                }
                case CLAIMED -> {
                    task.claimedNanos = System.nanoTime();
                    observer.claim(name, ClaimStatus.CLAIMED);
                    if (claim.attempt() > spec.maxAttempts()) {
                        releaseQuietly(claim);
                        task.claimedNanos = 0;
                        settle(task, Outcome.REJECTED, SettleReason.POISON, Subscription.MAX_ATTEMPTS_CONDITION,
                                "gave up after " + (claim.attempt() - 1) + " attempts (maxAttempts "
                                        + spec.maxAttempts() + "); earlier attempts did not finish");
                    } else {
                        runClaimed(task, message, key, claim);
                    }
                }
                default -> throw new IllegalStateException("unknown claim result " + claim.result());
            }
        } catch (RuntimeException | Error e) {
            // Whatever broke (a store bug, a linkage error), the delivery must still go back and free its slot.
            LOG.error("Subscription '{}': unexpected failure while processing a delivery; releasing it", name, e);
            try {
                settle(task, Outcome.RELEASED, SettleReason.FAILED, null, null);
            } finally {
                finished(task);
            }
        } finally {
            DeliveryScope scope = task.scope;
            if (scope != null) {
                task.scope = null;
                scope.close();
            }
        }
    }

    private String keyFor(Message<?> message) throws ClientException {
        String key = MessageKeys.fromMessageId(message.messageId());
        if (key != null) {
            return key;
        }
        MissingIdPolicy policy = spec.missingIdPolicy();
        switch (policy.kind()) {
            case APPLICATION_PROPERTY:
                return MessageKeys.fromProperty(policy.property(), message.property(policy.property()));
            case BODY_HASH:
                return MessageKeys.fromBodyBytes(BodyBytes.of(message));
            default:
                return null;
        }
    }

    private void runClaimed(DeliveryTask task, Message<?> message, String key, Claim claim) {
        Envelope envelope;
        try {
            envelope = EnvelopeImpl.of(key, spec.address(), message, claim.attempt());
        } catch (ClientException | RuntimeException e) {
            releaseQuietly(claim);
            task.claimedNanos = 0;
            settle(task, Outcome.REJECTED, SettleReason.UNDECODABLE, EnvelopeImpl.DECODE_ERROR,
                    "message cannot be decoded: " + Errors.describe(e));
            return;
        }
        ScheduledFuture<?> heartbeat = startHeartbeat(claim);
        Throwable failure = invokeHandler(task, message, envelope);
        if (heartbeat != null) {
            heartbeat.cancel(false);
        }
        if (failure == null) {
            confirm(claim);
            task.claimedNanos = 0;
            settle(task, Outcome.ACCEPTED, SettleReason.PROCESSED, null, null);
            return;
        }
        releaseQuietly(claim);
        task.claimedNanos = 0;
        if (spec.isPermanent(failure)) {
            settle(task, Outcome.REJECTED, SettleReason.PERMANENT, permanentCondition(failure),
                    permanentDescription(failure));
        } else if (claim.attempt() >= spec.maxAttempts()) {
            LOG.warn("Subscription '{}': message {} failed attempt {} of {}; rejecting it", name, key,
                    claim.attempt(), spec.maxAttempts());
            settle(task, Outcome.REJECTED, SettleReason.POISON, Subscription.MAX_ATTEMPTS_CONDITION,
                    "failed " + claim.attempt() + " attempts, last: " + Errors.describe(failure));
        } else {
            hold(task, spec.retryDelay(), spec.transientFailureOutcome(), SettleReason.FAILED);
        }
    }

    private static String permanentCondition(Throwable failure) {
        return failure instanceof PermanentMessageException p ? p.condition()
                : PermanentMessageException.DEFAULT_CONDITION;
    }

    /**
     * A {@link PermanentMessageException}'s description goes to the broker as given (its documented contract);
     * other permanent failure types are described by class and message.
     */
    private static String permanentDescription(Throwable failure) {
        if (failure instanceof PermanentMessageException && failure.getMessage() != null) {
            return failure.getMessage();
        }
        return Errors.describe(failure);
    }

    /** FAIL_OPEN with the store down: run the handler without de-duplication. */
    private void runUnclaimed(DeliveryTask task, Message<?> message, String key) {
        Throwable failure;
        try {
            failure = invokeHandler(task, message, EnvelopeImpl.of(key, spec.address(), message, 1));
        } catch (ClientException | RuntimeException e) {
            settle(task, Outcome.REJECTED, SettleReason.UNDECODABLE, EnvelopeImpl.DECODE_ERROR,
                    "message cannot be decoded: " + Errors.describe(e));
            return;
        }
        if (failure == null) {
            settle(task, Outcome.ACCEPTED, SettleReason.PROCESSED, null, null);
        } else if (spec.isPermanent(failure)) {
            settle(task, Outcome.REJECTED, SettleReason.PERMANENT, permanentCondition(failure),
                    permanentDescription(failure));
        } else {
            hold(task, spec.retryDelay(), spec.transientFailureOutcome(), SettleReason.FAILED);
        }
    }

    /**
     * At-most-once: the broker settled the delivery when it sent it, so there is nothing to acknowledge and nothing
     * comes back. The store still keeps a copy from running twice.
     */
    private void processAtMostOnce(DeliveryTask task, Message<?> message, String key) {
        SettleReason reason;
        try {
            Claim claim = null;
            try {
                claim = runtime.store().acquire(key);
                runtime.gate().success();
            } catch (RuntimeException e) {
                observer.claim(name, ClaimStatus.ERROR);
                runtime.gate().failure(e);
            }
            if (claim == null) {
                if (runtime.config().storeFailurePolicy() == StoreFailurePolicy.FAIL_OPEN) {
                    observer.storeBypassed(name);
                    Throwable failure = invokeHandler(task, message,
                            EnvelopeImpl.of(key, spec.address(), message, 1));
                    reason = failure == null ? SettleReason.PROCESSED : SettleReason.FAILED;
                } else {
                    LOG.warn("Subscription '{}' (at-most-once): store unreachable, message {} dropped", name, key);
                    reason = SettleReason.STORE_UNAVAILABLE;
                }
            } else if (claim.result() == org.acemq.amqp.api.IdempotencyStore.ClaimResult.CLAIMED) {
                task.claimedNanos = System.nanoTime();
                observer.claim(name, ClaimStatus.CLAIMED);
                Throwable failure = invokeHandler(task, message,
                        EnvelopeImpl.of(key, spec.address(), message, claim.attempt()));
                if (failure == null) {
                    confirm(claim);
                    task.claimedNanos = 0;
                    reason = SettleReason.PROCESSED;
                } else {
                    releaseQuietly(claim);
                    task.claimedNanos = 0;
                    LOG.warn("Subscription '{}' (at-most-once): handler failed, message {} is lost: {}", name, key,
                            Errors.describe(failure));
                    reason = SettleReason.FAILED;
                }
            } else {
                observer.claim(name, claim.result() == org.acemq.amqp.api.IdempotencyStore.ClaimResult.IN_PROGRESS
                        ? ClaimStatus.IN_PROGRESS : ClaimStatus.ALREADY_CONFIRMED);
                reason = claim.result() == org.acemq.amqp.api.IdempotencyStore.ClaimResult.IN_PROGRESS
                        ? SettleReason.IN_PROGRESS : SettleReason.DUPLICATE;
            }
        } catch (ClientException e) {
            reason = SettleReason.UNDECODABLE;
        }
        try {
            DeliveryScope scope = task.scope;
            if (scope != null) {
                scope.outcome(Outcome.ACCEPTED);
            }
            if (!task.delivery.remoteSettled()) {
                // The broker did not honour snd-settle-mode=settled. Settle it ourselves rather than leave it
                // acquired for ever (the QPID-8345 failure): at-most-once means it is done either way. Through the
                // generation check: after a reconnect protonj2 would drop this accept silently while reporting it
                // settled, and the broker will redeliver the message (the store absorbs it).
                if (!sendDisposition(task, Outcome.ACCEPTED, null, null)) {
                    observer.abandoned(name);
                    return;
                }
            }
            observer.settled(name, Outcome.ACCEPTED, reason);
        } catch (ClientException e) {
            observer.abandoned(name);
        } finally {
            finished(task);
        }
    }

    /**
     * Runs the handler with the message's trace context in the MDC (and inside the observer's scope). The
     * scope stays open until {@link #process} ends, so the runtime's own log lines about this delivery's outcome
     * carry the trace ids too.
     */
    private Throwable invokeHandler(DeliveryTask task, Message<?> message, Envelope envelope) {
        task.scope = DeliveryScope.open(TraceContext.of(message), observer, name, spec.address(),
                envelope.applicationProperties());
        long start = System.nanoTime();
        try {
            spec.handler().handle(envelope);
            observer.handled(name, System.nanoTime() - start, true);
            return null;
        } catch (Throwable t) {
            observer.handled(name, System.nanoTime() - start, false);
            DeliveryScope scope = task.scope;
            if (scope != null) {
                scope.failed(t);
            }
            if (t instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (t instanceof VirtualMachineError vme && !(t instanceof StackOverflowError)) {
                LOG.error("Subscription '{}': handler threw {}", name, vme.toString());
            } else {
                LOG.debug("Subscription '{}': handler failed on {}", name, envelope.id(), t);
            }
            return t;
        } finally {
            Thread.interrupted();
        }
    }

    private ScheduledFuture<?> startHeartbeat(Claim claim) {
        Duration lease = runtime.store().lease();
        if (!spec.renewLeases() || lease == null) {
            return null;
        }
        long period = Math.max(1, lease.toMillis() / 3);
        java.util.concurrent.atomic.AtomicReference<ScheduledFuture<?>> self =
                new java.util.concurrent.atomic.AtomicReference<>();
        ScheduledFuture<?> future = runtime.scheduleAtFixedRate(() -> {
            ScheduledFuture<?> me = self.get();
            if (me != null && me.isCancelled()) {
                throw new java.util.concurrent.CancellationException("handler returned"); // a beat already due
            }
            boolean keep;
            try {
                keep = runtime.store().renew(claim);
            } catch (RuntimeException e) {
                // Not fatal: the handler goes on, the next beat tries again, and confirm records completion anyway.
                LOG.debug("Lease renewal of {} failed: {}", claim.messageId(), Errors.describe(e));
                keep = true;
            }
            if (!keep) {
                if (me == null || !me.isCancelled()) {
                    // not when the handler has just returned: its confirm (or a transactional handler's own
                    // confirm) ended the lease, and that is no loss
                    LOG.warn("Subscription '{}': lease on {} was lost while its handler ran", name,
                            claim.messageId());
                }
                throw new java.util.concurrent.CancellationException("lease lost"); // ends the periodic renewal
            }
        }, period);
        self.set(future);
        return future;
    }

    /**
     * Records completion, retrying with back-off while the store fails. The delivery is still unsettled, so the
     * broker gives it to nobody else meanwhile; a store that answers within the confirm timeout loses nothing. Only
     * then is it accepted unconfirmed: the work is done, and returning it would make it run again for sure.
     */
    private void confirm(Claim claim) {
        long deadline = System.nanoTime() + runtime.config().confirmTimeout().toNanos();
        long pauseMillis = 20;
        for (int attempt = 1; ; attempt++) {
            try {
                if (!runtime.store().confirm(claim)) {
                    LOG.warn("Subscription '{}': {} was confirmed after its lease had been taken over", name,
                            claim.messageId());
                }
                runtime.gate().success();
                if (attempt > 1) {
                    LOG.info("Subscription '{}': {} confirmed after {} attempts", name, claim.messageId(), attempt);
                }
                return;
            } catch (RuntimeException e) {
                if (attempt == 1) {
                    runtime.gate().failure(e);
                }
                if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis) >= deadline) {
                    LOG.error("Subscription '{}': handler succeeded but the store could not record {} within {}; "
                            + "accepting it anyway (a later duplicate of it may run again): {}",
                            name, claim.messageId(), runtime.config().confirmTimeout(), Errors.describe(e));
                    return;
                }
                runtime.pause(Duration.ofMillis(pauseMillis));
                pauseMillis = Math.min(pauseMillis * 2, 1_000);
            }
        }
    }

    private void releaseQuietly(Claim claim) {
        try {
            runtime.store().release(claim);
        } catch (RuntimeException e) {
            // The lease lapses on its own; until then copies are IN_PROGRESS and held back, never lost.
            LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                    claim.messageId(), Errors.describe(e));
            runtime.gate().failure(e);
        }
    }

    // ------------------------------------------------------------------ settlement

    private void hold(DeliveryTask task, Duration delay, Outcome outcome, SettleReason reason) {
        DeliveryScope scope = task.scope;
        if (scope != null) {
            scope.outcome(outcome);
        }
        if (delay.isZero() || stopping) {
            settle(task, outcome, reason, null, null);
            return;
        }
        Runnable settleNow = () -> {
            if (holds.remove(task) != null) {
                settle(task, outcome, reason, null, null);
            }
        };
        ScheduledFuture<?> future = runtime.schedule(settleNow, delay);
        holds.put(task, new Hold(future, settleNow));
        if (future.isDone() && holds.containsKey(task)) {
            settleNow.run();
        }
    }

    void settle(DeliveryTask task, Outcome outcome, SettleReason reason, String condition, String description) {
        DeliveryScope scope = task.scope;
        if (scope != null) {
            scope.outcome(outcome);
        }
        if (transactions != null) {
            transactions.enlist(task, outcome, reason, condition, truncate(description));
            return;
        }
        try {
            if (!sendDisposition(task, outcome, condition, truncate(description))) {
                observer.abandoned(name);
                return;
            }
            observer.settled(name, outcome, reason);
        } finally {
            finished(task);
        }
    }

    /**
     * Sends the outcome if the delivery's link and connection are still the ones it arrived on. protonj2 silently
     * drops a disposition for a delivery from before a reconnect while reporting it settled, so such deliveries
     * are never settled (nor counted): the broker redelivers them, and the store absorbs the copies.
     *
     * @return whether the disposition was handed to a live link
     */
    boolean sendDisposition(DeliveryTask task, Outcome outcome, String condition, String description) {
        if (!isCurrent(task)) {
            return false;
        }
        try {
            switch (outcome) {
                case ACCEPTED -> task.delivery.accept();
                case RELEASED -> task.delivery.release();
                case MODIFIED -> task.delivery.modified(true, false);
                case REJECTED -> task.delivery.reject(condition, description);
                default -> throw new IllegalStateException("unknown outcome " + outcome);
            }
        } catch (ClientException e) {
            LOG.debug("Subscription '{}': disposition not sent: {}", name, Errors.describe(e));
            return false;
        }
        return task.connectionGeneration == runtime.connectionGeneration();
    }

    /** @return whether the delivery arrived on the link and connection that are current now */
    boolean isCurrent(DeliveryTask task) {
        return task.connectionGeneration == runtime.connectionGeneration() && task.linkGeneration == linkGeneration;
    }

    /** Called from the connection's interruptedHandler. */
    void connectionInterrupted() {
        if (transactions != null) {
            transactions.connectionInterrupted();
        }
    }


    private static String truncate(String description) {
        if (description == null || description.length() <= MAX_DESCRIPTION) {
            return description;
        }
        return description.substring(0, MAX_DESCRIPTION - 3) + "...";
    }

    // ------------------------------------------------------------------ shutdown and health

    /** Stops taking deliveries, drains the link, and releases every delivery that was received but not started. */
    void stopIntake() {
        lock.lock();
        try {
            stopping = true;
            intakeOpen.signalAll();
            wakeReceivers();
        } finally {
            lock.unlock();
        }
        stopSignal.countDown();
        if (control != null) {
            try {
                control.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        List<DeliveryTask> left;
        lock.lock();
        try {
            left = new ArrayList<>(pending);
            pending.clear();
        } finally {
            lock.unlock();
        }
        for (DeliveryTask task : left) {
            stopTask(task);
        }
        Receiver r = receiver;
        if (r == null) {
            return;
        }
        try {
            // Bounded separately from the request timeout: a broker that ignores the drain must not hold up
            // shutdown for long; the prefetched deliveries are released below either way.
            long timeout = Math.min(runtime.config().connection().requestTimeout().toMillis(), FINAL_DRAIN_MILLIS);
            r.drain().get(timeout, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | ClientException e) {
            LOG.debug("Final drain of '{}' failed: {}", name, Errors.describe(e));
        }
        try {
            org.apache.qpid.protonj2.client.Delivery d;
            while ((d = r.tryReceive()) != null) {
                // Through the normal path: a TRANSACTIONAL release is enlisted and reported only after the
                // discharge (AMQ-5456), and an AT_MOST_ONCE delivery, already settled by the broker, is handled
                // rather than "released" (which would send nothing and lose it).
                stopTask(take(d));
            }
        } catch (ClientException e) {
            LOG.debug("Releasing prefetched deliveries of '{}' failed: {}", name, Errors.describe(e));
        }
    }

    /** A delivery taken but not started when the subscription stops. */
    private void stopTask(DeliveryTask task) {
        if (spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE) {
            workers.execute(task);
        } else {
            settle(task, Outcome.RELEASED, SettleReason.SHUTDOWN, null, null);
        }
    }

    /** @return whether every handler finished before the deadline */
    boolean awaitHandlers(long deadlineNanos) {
        workers.shutdown();
        for (Hold hold : new ArrayList<>(holds.values())) {
            if (hold.future().cancel(false)) {
                hold.settle().run();
            }
        }
        boolean done;
        try {
            done = workers.awaitTermination(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            done = false;
        }
        for (Hold hold : new ArrayList<>(holds.values())) {
            if (hold.future().cancel(false)) {
                hold.settle().run();
            }
        }
        if (transactions != null) {
            transactions.stop();
        }
        if (!done) {
            LOG.warn("Subscription '{}': {} handler(s) still running at shutdown; their deliveries go back to the "
                    + "broker when the link closes (default outcome: released) and their claims lapse with the lease",
                    name, workers.getActiveCount());
        }
        return done;
    }

    void closeLink() {
        Receiver r = receiver;
        receiver = null;
        if (r != null) {
            try {
                r.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing receiver of '{}' failed: {}", name, Errors.describe(e));
            }
        }
        workers.shutdownNow();
    }

    SubscriptionHealth health() {
        int heldNow;
        int creditNow;
        // Deliveries queued in the client are reported as held (the broker gave them to us), not as credit: the
        // handler threads take them from there, and the broker can no longer use that credit.
        long queued = 0;
        Receiver r = receiver;
        if (r != null) {
            try {
                queued = r.queuedDeliveries();
            } catch (ClientException | RuntimeException e) {
                queued = 0; // link closing: nothing to move
            }
        }
        lock.lock();
        try {
            int waiting = (int) Math.min(credit, queued);
            heldNow = held + waiting;
            creditNow = credit - waiting;
        } finally {
            lock.unlock();
        }
        long oldest = 0;
        long oldestClaim = 0;
        long now = System.nanoTime();
        for (DeliveryTask t : inFlight.keySet()) {
            oldest = Math.max(oldest, now - t.receivedNanos);
            long claimed = t.claimedNanos;
            if (claimed != 0) {
                oldestClaim = Math.max(oldestClaim, now - claimed);
            }
        }
        // While the connection is down protonj2 keeps the Receiver object (and re-attaches it after reconnecting),
        // but the link is not attached then.
        boolean attached = receiver != null && !stopping && runtime.connected();
        return new SubscriptionHealth(name, spec.address(), attached, heldNow, creditNow, Duration.ofNanos(oldest),
                Duration.ofNanos(oldestClaim));
    }

    String lastError() {
        return lastError;
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.ErrorCondition;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientSessionRemotelyClosedException;
import org.apache.qpid.protonj2.client.exceptions.ClientUnsupportedOperationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription's link over time: attaches it, wraps every incarnation in a {@link ReceiverLink}, accounts its
 * credit with the {@link CreditAllocator}, and replaces it when it ends (re-attach with back-off, on a new session if
 * the broker ended the old one; a new link object after a reconnect). Its {@link HandlerThreads} take deliveries and
 * hand them to the {@link DeliveryProcessor}.
 */
final class Subscriber {

    private static final Logger LOG = LoggerFactory.getLogger(Subscriber.class);
    private static final long FIRST_REATTACH_MILLIS = 100;
    private static final long MAX_REATTACH_MILLIS = 30_000;
    private static final long FINAL_DRAIN_MILLIS = 5_000;

    final Subscription spec;
    final String name;
    private final ConsumerRuntime runtime;
    private final SessionHandle sessions;
    private final LinkCredit credit;
    private final Settlement settlement;
    private final Holds holds;
    private final HandlerThreads threads;
    private final OutcomePolicy policy;
    private final AtomicBoolean reattachPending = new AtomicBoolean();
    private final Object linkChanged = new Object();
    private volatile ReceiverLink current;
    private volatile boolean stopping;
    /** Stopped by the application ({@link #suspend}): no link, no intake, until {@link #unsuspend}. */
    private volatile boolean suspended;
    private volatile boolean paused;
    private final Object lifecycle = new Object();
    private volatile String lastError;
    private long reattachDelayMillis = FIRST_REATTACH_MILLIS;
    private long generation;
    private volatile boolean addressWarned;

    Subscriber(ConsumerRuntime runtime, Subscription spec, SessionHandle sessions) {
        this.runtime = runtime;
        this.spec = spec;
        this.name = spec.name();
        this.sessions = sessions;
        this.suspended = !spec.autoStartup();
        this.credit = new LinkCredit(runtime, name, spec.maxInFlight(), () -> current);
        this.holds = new Holds(runtime.scheduler());
        Settlement.Report report = new Settlement.Report(name, runtime.observer(), runtime.allocator());
        this.policy = new OutcomePolicy(spec, runtime.config().storeFailurePolicy());
        this.settlement = switch (spec.acknowledgementMode()) {
            case AT_LEAST_ONCE -> new DirectSettlement(report);
            case AT_MOST_ONCE -> new PreSettledSettlement(report);
            case TRANSACTIONAL -> new TransactionalSettlement(report, policy, runtime.ticker(),
                    spec.transactionBatchSize(), spec.transactionBatchTime());
        };
        Keys keys = new Keys(spec, runtime.config().scopePrefix());
        LOG.info("Subscription '{}' on '{}': keys from {} in scope '{}', fingerprint {}", name, spec.address(),
                spec.keySource(), LogSafe.id(keys.scope()), spec.fingerprint());
        DeliveryProcessor processor = new DeliveryProcessor(spec, runtime, policy, settlement, holds, () -> stopping || suspended,
                runtime.jitter(), runtime.leasePeriodNanos(), keys);
        this.threads = new HandlerThreads(this, processor, runtime.ticker(),
                spec.renewLeases() ? runtime.leasePeriodNanos() : 0);
    }

    // ------------------------------------------------------------------ attach

    /** Once per subscription: an address this broker makes non-durable loses messages; say so and what to use. */
    private void warnIfRisky() {
        if (addressWarned) {
            return;
        }
        String risk = runtime.profile().addressRisk(spec.address());
        if (risk != null) {
            addressWarned = true;
            LOG.warn("Subscription '{}' consumes from '{}': {}", name, spec.address(), risk);
        }
    }

    /** Starts the handler threads; they wait for a link. */
    void startThreads() {
        threads.start(runtime.name() + "-" + name + "-worker-");
    }

    HandlerThreads threads() {
        return threads;
    }

    /**
     * Attaches a new link (on a new session if the broker ended the last one) and grants it credit.
     *
     * @throws ClientException if the broker refuses the attach, or cannot serve this subscription at all
     */
    void attach() throws ClientException {
        if (spec.acknowledgementMode() == AcknowledgementMode.TRANSACTIONAL && !runtime.profile().transactions()) {
            throw new ClientUnsupportedOperationException(runtime.profile() + " does not support AMQP transactions, "
                    + "which TRANSACTIONAL acknowledgement needs; use AT_LEAST_ONCE with this broker");
        }
        Session session = sessions.session();
        Receiver receiver;
        try {
            receiver = Receivers.open(session, spec, runtime.config().connection());
        } catch (ClientSessionRemotelyClosedException e) {
            sessions.ended(session);
            throw e;
        }
        ReceiverLink link = new ReceiverLink(receiver, session, ++generation, credit.member(), runtime.control());
        try {
            settlement.attached(link);
        } catch (ClientException | RuntimeException e) {
            receiver.closeAsync();
            throw e;
        }
        hook(link);
        warnIfRisky();
        link.attached(true);
        setCurrent(link);
        lastError = null;
        runtime.allocator().attached(credit.member());
    }

    private void hook(ReceiverLink link) {
        if (runtime.hooks().available()) {
            link.hooks(runtime.hooks().install(link.receiver, new LinkEvents(link)));
        }
    }

    /** What the engine hooks report about one link, on the connection's I/O thread. */
    private final class LinkEvents implements EngineHooks.Listener {
        private final ReceiverLink link;

        LinkEvents(ReceiverLink link) {
            this.link = link;
        }

        @Override
        public void aborted() {
            credit.aborted(link);
        }

        @Override
        public void drained(int unused) {
            credit.drained(link, unused);
        }

        @Override
        public void closedByPeer(String condition, String description) {
            String what = condition == null ? "detached by the broker" : condition
                    + (description == null ? "" : " \"" + description + "\"");
            runtime.control().execute(() -> linkLost(link, what, false, condition, description));
        }

        @Override
        public void beyondCredit() {
            try {
                runtime.control().execute(() -> releasedBeyondCredit(link));
            } catch (java.util.concurrent.RejectedExecutionException e) {
                LOG.debug("Subscription '{}': a delivery beyond credit was released while closing", name);
            }
        }
    }

    /**
     * A delivery arrived on {@code link} beyond the credit granted on it and the engine hooks released it unread:
     * count it (released, {@code beyond_credit}: it never reached the store) and say why once per link incarnation.
     */
    private void releasedBeyondCredit(ReceiverLink link) {
        Verdict v = policy.beyondCredit();
        runtime.observer().settled(name, null, v.outcome(), v.reason());
        if (link.firstBeyondCredit()) {
            LOG.warn("Subscription '{}' on '{}' (link {}): the broker ({}) sent a delivery beyond the link credit it "
                    + "was granted (a known RabbitMQ 3.x bug, rabbitmq-server#2597, gone with RabbitMQ 4's native "
                    + "AMQP 1.0). Every such delivery is released at once, unread, and the broker redelivers it; it "
                    + "is counted as released/beyond_credit. Said once per link.", name, spec.address(), link,
                    runtime.profile());
        }
    }

    private void setCurrent(ReceiverLink link) {
        synchronized (linkChanged) {
            current = link;
            linkChanged.notifyAll();
        }
    }

    /** @return the link deliveries are taken from now, waiting while there is none; null once stopping */
    ReceiverLink awaitLink() {
        ReceiverLink l = current;
        if (l != null && l.isValid() && !stopping && !suspended) {
            return l;
        }
        synchronized (linkChanged) {
            while (!stopping && (suspended || (l = current) == null || !l.isValid())) {
                try {
                    linkChanged.wait();
                } catch (InterruptedException e) {
                    Thread.interrupted(); // only close() interrupts, and it sets stopping first
                }
            }
            return stopping ? null : l;
        }
    }

    /**
     * The link that accounts for a delivery taken from the receiver of {@code from}. protonj2 keeps that receiver
     * across a reconnect, so a delivery taken while {@code from} is current may have arrived on its successor (a receive
     * that waited through the reconnect), and one taken after the successor became current may still have arrived on
     * the lost connection (taken just before protonj2 emptied its queue, or just before this thread learnt of the
     * loss). Such a delivery is never live, whichever link accounts for it: {@link ReceiverLink#live} asks the
     * delivery's own connection. While the successor is not attached yet, it is accounted to the link that ended with
     * the connection, as it arrived there.
     *
     * @param from the link whose receiver the delivery was taken from
     * @param amqp the delivery
     * @return the link that owns it
     */
    ReceiverLink owner(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        ReceiverLink now = current;
        if (now == null || now.receiver != from.receiver) {
            return from;
        }
        if (now.predecessor != null && !now.attached() && EngineHooks.connectionLost(amqp)) {
            return now.predecessor; // the successor is not attached yet: the delivery came over the lost connection
        }
        return now;
    }

    /** @return the current link, or null */
    ReceiverLink currentLink() {
        return current;
    }

    LinkCredit credit() {
        return credit;
    }

    // ------------------------------------------------------------------ the link ends

    /** A handler thread's receive failed. */
    void receiveFailed(ReceiverLink link, ClientException e) {
        if (e instanceof org.apache.qpid.protonj2.client.exceptions.ClientIOException) {
            lastError = "connection: " + Errors.describe(e);
            stopping = true; // the connection is gone for good: no receive can succeed any more
            setCurrent(current);
            runtime.connectionFailed(e);
            return;
        }
        ErrorCondition c = Errors.condition(e);
        linkLost(link, Errors.describe(e), e instanceof ClientSessionRemotelyClosedException,
                c == null ? null : c.condition(), c == null ? null : c.description());
    }

    /** The link ended (once per link, whichever thread noticed first): account for it and re-attach. */
    void linkLost(ReceiverLink link, String what, boolean sessionEnded, String condition, String description) {
        if (!credit.detached(link) || stopping || suspended) {
            return;
        }
        lastError = "link: " + what;
        if (sessionEnded) {
            if (BrokerProfile.refusesModified(condition, description)) {
                runtime.profile().modifiedRefused(condition + " \"" + description + "\"");
            }
            sessions.ended(link.session);
        }
        LOG.warn("Link of subscription '{}' to '{}' was closed: {}; re-attaching", name, spec.address(), what);
        runtime.control().execute(() -> link.receiver.closeAsync());
        scheduleReattach();
    }

    private void scheduleReattach() {
        if (stopping || suspended || !reattachPending.compareAndSet(false, true)) {
            return;
        }
        runtime.later(() -> {
            reattachPending.set(false);
            reattach();
        }, Duration.ofMillis(reattachDelayMillis));
    }

    private void reattach() {
        if (stopping || suspended || (current != null && current.isValid())) {
            return;
        }
        try {
            attach();
            reattachDelayMillis = FIRST_REATTACH_MILLIS;
            LOG.info("Subscription '{}' re-attached to '{}'", name, spec.address());
        } catch (ClientException | RuntimeException e) {
            lastError = "link: " + Errors.describe(e);
            reattachDelayMillis = Math.min(reattachDelayMillis * 2, MAX_REATTACH_MILLIS);
            LOG.warn("Attaching subscription '{}' to '{}' failed: {}; next try in {} ms", name, spec.address(),
                    lastError, reattachDelayMillis);
            scheduleReattach();
        }
    }

    /** Attaching failed at start (not fail-fast): keep trying with back-off. */
    void attachLater(Exception cause) {
        lastError = "link: " + Errors.describe(cause);
        LOG.warn("Attaching subscription '{}' to '{}' failed: {}; next try in {} ms", name, spec.address(), lastError,
                reattachDelayMillis);
        runtime.allocator().detached(credit.member(), 0);
        scheduleReattach();
    }

    // ------------------------------------------------------------------ connection events

    /**
     * The connection was interrupted. protonj2 re-creates the receiver at every reconnect attempt and re-attaches it
     * with the credit it had left: the link ends here, and a successor link over the same receiver inherits that
     * credit. The engine hooks go onto the re-created receiver (again after every failed attempt).
     *
     * @param first whether this is the first report of this outage (later ones are failed reconnect attempts)
     */
    void connectionInterrupted(boolean first) {
        if (first) {
            settlement.connectionInterrupted();
        }
        ReceiverLink l = current;
        if (l == null) {
            return;
        }
        if (l.attached()) {
            ReceiverLink successor = credit.interrupted(l);
            if (successor != null) {
                setCurrent(successor);
            }
        }
        ReceiverLink now = current;
        if (now.isValid()) {
            hook(now);
        }
    }

    /** protonj2 re-attached the receiver: its successor link is attached and may be granted credit again. */
    void connectionRestored() {
        ReceiverLink s = current;
        if (s != null && s.isValid() && !s.attached()) {
            hook(s);
            s.attached(true);
            runtime.allocator().attached(credit.member());
        }
    }

    // ------------------------------------------------------------------ shutdown and health

    boolean stopping() {
        return stopping;
    }

    /** @return whether no delivery may be taken now: the consumer closes or the application stopped this one */
    boolean quiet() {
        return stopping || suspended;
    }

    /** @return whether the application stopped this subscription */
    boolean suspended() {
        return suspended;
    }

    /** @return whether the application paused this subscription */
    boolean paused() {
        return paused;
    }

    // ------------------------------------------------------------------ application lifecycle

    /**
     * The application pauses this subscription: no more credit, and the link's unused credit is taken back (drained,
     * where the broker answers drains per spec); deliveries already received are handled as usual.
     */
    void pause() {
        synchronized (lifecycle) {
            if (stopping || paused) {
                return;
            }
            paused = true;
            runtime.allocator().pause(credit.member());
            LOG.info("Subscription '{}' on '{}' paused", name, spec.address());
        }
    }

    /** The application resumes this subscription: credit is granted again. */
    void resume() {
        synchronized (lifecycle) {
            if (stopping || !paused) {
                return;
            }
            paused = false;
            runtime.allocator().resume(credit.member());
            LOG.info("Subscription '{}' on '{}' resumed", name, spec.address());
        }
    }

    /**
     * The application stops this subscription: no more credit (drained where the broker answers drains per spec),
     * deliveries received or admitted but not started are released (their claims too), running handlers finish and
     * are settled, then the link is detached. The consumer and its other subscriptions go on.
     *
     * @param timeout how long to wait for running handlers
     * @return whether every handler finished in time (if not, the link is detached anyway: the broker gets their
     *     deliveries back, and their copies are absorbed by the store as after a lost link)
     */
    boolean suspend(Duration timeout) {
        synchronized (lifecycle) {
            if (stopping || suspended) {
                return true;
            }
            if (spec.acknowledgementMode() != AcknowledgementMode.AT_LEAST_ONCE) {
                throw new UnsupportedOperationException("Subscription '" + name + "' is "
                        + spec.acknowledgementMode() + ": only an AT_LEAST_ONCE subscription can be stopped and "
                        + "started again while the consumer runs; pause() it instead, or close the consumer");
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            suspended = true;
            CompletableFuture<Void> drained = credit.pause();
            setCurrent(current);
            threads.wakeReceivers();
            ReceiverLink l = current;
            if (l != null && l.isValid() && runtime.profile().drainPerSpec()) {
                try {
                    long millis = Math.min(runtime.config().connection().requestTimeout().toMillis(),
                            FINAL_DRAIN_MILLIS);
                    drained.get(millis, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (ExecutionException | TimeoutException e) {
                    LOG.debug("Drain of '{}' before its stop was not answered: {}", name, Errors.describe(e));
                }
            }
            threads.releaseWaiting(); // admitted (claimed), not started
            if (l != null && l.isValid()) {
                threads.releaseQueued(l);
            }
            boolean done = threads.awaitIdle(deadline);
            holds.settleAll();
            l = current;
            if (l != null && l.isValid()) {
                threads.releaseQueued(l); // what a broker that ignores drains sent meanwhile
            }
            if (l != null && credit.detached(l)) {
                try {
                    l.receiver.close();
                } catch (RuntimeException e) {
                    LOG.debug("Closing receiver of '{}' failed: {}", name, Errors.describe(e));
                }
            }
            LOG.info("Subscription '{}' on '{}' stopped{}", name, spec.address(),
                    done ? "" : " (some handlers were still running; their deliveries went back to the broker)");
            return done;
        }
    }

    /**
     * The application starts this subscription again after {@link #suspend}: attaches a new link (in the background,
     * with back-off, if the broker refuses it or the connection is down) and grants credit unless paused.
     */
    void unsuspend() {
        synchronized (lifecycle) {
            if (stopping || !suspended) {
                return;
            }
            suspended = false;
            if (!paused) {
                runtime.allocator().resume(credit.member());
            }
            reattachDelayMillis = FIRST_REATTACH_MILLIS;
            LOG.info("Subscription '{}' on '{}' starting again", name, spec.address());
            runtime.control().execute(this::reattach);
        }
    }

    /** Stops taking deliveries, drains the link, and releases every delivery received but not started. */
    void stopIntake() {
        stopping = true;
        runtime.allocator().leave(credit.member());
        setCurrent(current);
        threads.wakeReceivers();
        ReceiverLink l = current;
        if (l == null || !l.isValid()) {
            if (!policy.handlesLeftAtShutdown()) {
                threads.releaseWaiting();
            }
            return;
        }
        if (runtime.profile().drainPerSpec()) {
            // Bounded separately from the request timeout: a broker that ignores the drain must not hold up
            // shutdown for long; what arrives meanwhile is released below either way.
            try {
                long timeout = Math.min(runtime.config().connection().requestTimeout().toMillis(), FINAL_DRAIN_MILLIS);
                credit.drainNow().get(timeout, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                LOG.debug("Final drain of '{}' was not answered: {}", name, Errors.describe(e));
            }
        }
        if (!policy.handlesLeftAtShutdown()) {
            threads.releaseWaiting(); // admitted (claimed), not started
            threads.releaseQueued(l); // else (at-most-once) the handler threads handle them as they stop
        }
    }

    /** @return whether every handler finished before the deadline */
    boolean awaitHandlers(long deadlineNanos) {
        boolean done = threads.await(deadlineNanos);
        ReceiverLink l = current;
        if (l != null && l.isValid() && !policy.handlesLeftAtShutdown()) {
            // A broker that is not drained (it answers drains against the spec) may use the credit it still holds
            // while the handlers finish: release what arrived meanwhile with a disposition of ours, reported like the
            // rest, instead of leaving it to the detach, where nobody would count it.
            threads.releaseQueued(l);
        }
        holds.settleAll();
        settlement.stop();
        return done;
    }

    void closeLink() {
        ReceiverLink l = current;
        if (l != null) {
            l.invalidate(ReceiverLink.End.DETACHED);
            try {
                l.receiver.close();
            } catch (RuntimeException e) {
                LOG.debug("Closing receiver of '{}' failed: {}", name, Errors.describe(e));
            }
        }
        threads.interruptAll();
    }

    SubscriptionHealth health(boolean connected) {
        ReceiverLink l = current;
        long queued = 0;
        if (l != null && l.isValid()) {
            try {
                queued = l.receiver.queuedDeliveries();
            } catch (ClientException | RuntimeException e) {
                queued = 0; // link closing
            }
        }
        int inFlight = (int) Math.min(Integer.MAX_VALUE, credit.inHand() + queued);
        int unused = Math.max(0, credit.member().outstanding() - inFlight);
        long now = runtime.ticker().read();
        boolean attached = l != null && l.attached() && !stopping && connected;
        return new SubscriptionHealth(name, spec.address(), attached, inFlight, unused,
                Duration.ofNanos(Math.max(threads.oldest(now), holds.oldest(now))),
                Duration.ofNanos(threads.oldestClaim(now)), suspended);
    }

    String lastError() {
        return lastError;
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
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
    private volatile String lastError;
    private long reattachDelayMillis = FIRST_REATTACH_MILLIS;
    private long generation;
    private volatile boolean addressWarned;

    Subscriber(ConsumerRuntime runtime, Subscription spec, SessionHandle sessions) {
        this.runtime = runtime;
        this.spec = spec;
        this.name = spec.name();
        this.sessions = sessions;
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
        DeliveryProcessor processor = new DeliveryProcessor(spec, runtime, policy, settlement, holds, () -> stopping,
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
        if (l != null && l.isValid() && !stopping) {
            return l;
        }
        synchronized (linkChanged) {
            while (!stopping && ((l = current) == null || !l.isValid())) {
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
        if (!credit.detached(link) || stopping) {
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
        if (stopping || !reattachPending.compareAndSet(false, true)) {
            return;
        }
        runtime.later(() -> {
            reattachPending.set(false);
            reattach();
        }, Duration.ofMillis(reattachDelayMillis));
    }

    private void reattach() {
        if (stopping || (current != null && current.isValid())) {
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
                Duration.ofNanos(threads.oldestClaim(now)));
    }

    String lastError() {
        return lastError;
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.client.ErrorCondition;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientSessionRemotelyClosedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription's link over time: attaches it, wraps every incarnation in a {@link ReceiverLink}, accounts its
 * credit ({@link LinkCredit}), and replaces it when it ends (re-attach with back-off, on a new session if the broker
 * ended the old one; a new link object after a reconnect). It also holds whether deliveries may be taken at all (the
 * consumer closes, or the application stopped the subscription): the intake asks it for the link to take from.
 */
final class LinkKeeper implements Intake.Source {

    private static final Logger LOG = LoggerFactory.getLogger(LinkKeeper.class);
    private static final long FIRST_REATTACH_MILLIS = 100;
    private static final long MAX_REATTACH_MILLIS = 30_000;

    private final Subscription spec;
    private final String name;
    private final SessionHandle sessions;
    private final CreditAllocator allocator;
    private final Control control;
    private final CurrentBroker broker;
    private final Settlement settlement;
    private final Consumer<Throwable> connectionLost;
    /** Whether the consumer reconnects by itself (a token credential): a lost connection is not the end then. */
    private final boolean ownReconnects;
    private final LinkCredit credit;
    private final LinkAttacher attacher;
    private final AtomicBoolean reattachPending = new AtomicBoolean();
    private final Object linkChanged = new Object();
    private volatile ReceiverLink current;
    private volatile boolean stopping;
    /** Stopped by the application: no link, no intake, until started again. */
    private volatile boolean suspended;
    private volatile String lastError;
    private long reattachDelayMillis = FIRST_REATTACH_MILLIS;

    /**
     * @param settlement told of each new link and of an interrupted connection
     * @param policy for a delivery beyond credit
     * @param connectionLost told when a receive finds the connection gone for good (not when the consumer reconnects
     *     by itself, {@link AmqpOptions#reconnectsItself(ConnectionSettings)}: protonj2 tells the connector then)
     */
    LinkKeeper(Subscription spec, SessionHandle sessions, ConnectionSettings connection, CreditAllocator allocator,
               Control control, CurrentBroker broker, ProtonInternals internals, SafeObserver observer,
               Settlement settlement, OutcomePolicy policy, Consumer<Throwable> connectionLost) {
        this.spec = spec;
        this.name = spec.name();
        this.sessions = sessions;
        this.allocator = allocator;
        this.control = control;
        this.broker = broker;
        this.settlement = settlement;
        this.connectionLost = connectionLost;
        this.ownReconnects = AmqpOptions.reconnectsItself(connection);
        this.suspended = !spec.autoStartup();
        this.credit = new LinkCredit(allocator, control, broker, connection.requestTimeout(), name,
                spec.maxInFlight(), () -> current);
        this.attacher = new LinkAttacher(spec, sessions, connection, control, broker, internals, observer, settlement,
                policy, credit, this::linkLost);
    }

    LinkCredit credit() {
        return credit;
    }

    /**
     * Attaches a new link (on a new session if the broker ended the last one) and grants it credit.
     *
     * @throws ClientException if the broker refuses the attach, or cannot serve this subscription at all
     */
    void attach() throws ClientException {
        ReceiverLink link = attacher.open();
        link.attached(true);
        setCurrent(link);
        lastError = null;
        allocator.attached(credit.member());
    }

    private void setCurrent(ReceiverLink link) {
        synchronized (linkChanged) {
            current = link;
            linkChanged.notifyAll();
        }
    }

    /** @return the link deliveries are taken from now, waiting while there is none; null once stopping */
    @Override
    public ReceiverLink awaitLink() {
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

    @Override
    public Arrival take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp, long receivedNanos) {
        ReceiverLink owner = credit.owner(from, amqp);
        boolean counted = owner.take();
        if (!counted) {
            credit.lateTake(owner);
        }
        return Arrival.taken(amqp, owner, counted, receivedNanos);
    }

    /** @return the current link, or null */
    ReceiverLink currentLink() {
        return current;
    }

    // ------------------------------------------------------------------ the link ends

    /** A handler thread's receive failed. */
    @Override
    public void receiveFailed(ReceiverLink link, ClientException e) {
        if (e instanceof org.apache.qpid.protonj2.client.exceptions.ClientIOException) {
            // Gone for good, unless the consumer reconnects by itself: then the link just ends with its connection (the
            // connector hears of the loss from protonj2 and attaches a new link on the next connection).
            if (!ownReconnects || credit.detached(link)) {
                lastError = "connection: " + Errors.describe(e);
            }
            if (!ownReconnects) {
                stopping = true;
                setCurrent(current);
                connectionLost.accept(e);
            }
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
                broker.profile().modifiedRefused(condition + " \"" + description + "\"");
            }
            sessions.ended(link.session);
        }
        LOG.warn("Link of subscription '{}' to '{}' was closed: {}; re-attaching", name, spec.address(), what);
        control.execute(() -> link.receiver.closeAsync());
        scheduleReattach();
    }

    private void scheduleReattach() {
        if (stopping || suspended || !reattachPending.compareAndSet(false, true)) {
            return;
        }
        control.later(() -> {
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
        allocator.detached(credit.member(), 0);
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
            attacher.hook(now);
        }
    }

    /** protonj2 re-attached the receiver: its successor link is attached and may be granted credit again. */
    void connectionRestored() {
        ReceiverLink s = current;
        if (s != null && s.isValid() && !s.attached()) {
            attacher.hook(s);
            s.attached(true);
            allocator.attached(credit.member());
        }
    }

    // ------------------------------------------------------------------ taking deliveries at all

    /** @return whether the consumer is closing */
    public boolean stopping() {
        return stopping;
    }

    /** @return whether no delivery may be taken now: the consumer closes or the application stopped this one */
    @Override
    public boolean quiet() {
        return stopping || suspended;
    }

    /** @return whether the application stopped this subscription */
    boolean suspended() {
        return suspended;
    }

    /** The consumer closes: nothing more is taken, and threads waiting for a link are woken. */
    void stop() {
        stopping = true;
        setCurrent(current);
    }

    /** The application stops the subscription: nothing more is taken until {@link #unsuspend}. */
    void suspend() {
        suspended = true;
        setCurrent(current);
    }

    /** The application starts the subscription again: a new link is attached on the control thread. */
    void unsuspend() {
        suspended = false;
        reattachDelayMillis = FIRST_REATTACH_MILLIS;
        control.execute(this::reattach);
    }

    String lastError() {
        return lastError;
    }
}

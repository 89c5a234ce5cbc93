package org.acemq.amqp.consumer.internal;

import java.util.concurrent.RejectedExecutionException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.internal.engine.HookEvents;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientSessionRemotelyClosedException;
import org.apache.qpid.protonj2.client.exceptions.ClientUnsupportedOperationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a subscription's links: a receiver on the subscription's session (a new session if the broker ended the last
 * one), wrapped in a {@link ReceiverLink}, with the engine hooks on it, whose events it turns into credit accounting
 * ({@link LinkCredit}) and link losses ({@link Lost}).
 */
final class LinkAttacher {

    private static final Logger LOG = LoggerFactory.getLogger(LinkAttacher.class);

    /** Told when the broker closed a link (on the control thread). */
    interface Lost {
        void linkLost(ReceiverLink link, String what, boolean sessionEnded, String condition, String description);
    }

    private final Subscription spec;
    private final String name;
    private final SessionHandle sessions;
    private final ConnectionSettings connection;
    private final Control control;
    private final CurrentBroker broker;
    private final ProtonInternals internals;
    private final SafeObserver observer;
    private final Settlement settlement;
    private final OutcomePolicy policy;
    private final LinkCredit credit;
    private final Lost lost;
    private long generation;
    private volatile boolean addressWarned;

    LinkAttacher(Subscription spec, SessionHandle sessions, ConnectionSettings connection, Control control,
                 CurrentBroker broker, ProtonInternals internals, SafeObserver observer, Settlement settlement,
                 OutcomePolicy policy, LinkCredit credit, Lost lost) {
        this.spec = spec;
        this.name = spec.name();
        this.sessions = sessions;
        this.connection = connection;
        this.control = control;
        this.broker = broker;
        this.internals = internals;
        this.observer = observer;
        this.settlement = settlement;
        this.policy = policy;
        this.credit = credit;
        this.lost = lost;
    }

    /**
     * @return a new link, hooked, not yet marked attached nor granted credit
     * @throws ClientException if the broker refuses the attach, or cannot serve this subscription at all
     */
    ReceiverLink open() throws ClientException {
        if (spec.acknowledgementMode() == AcknowledgementMode.TRANSACTIONAL && !broker.profile().transactions()) {
            throw new ClientUnsupportedOperationException(broker.profile() + " does not support AMQP transactions, "
                    + "which TRANSACTIONAL acknowledgement needs; use AT_LEAST_ONCE with this broker");
        }
        Session session = sessions.session();
        Receiver receiver;
        try {
            receiver = Receivers.open(session, spec, connection);
        } catch (ClientSessionRemotelyClosedException e) {
            sessions.ended(session);
            throw e;
        }
        ReceiverLink link = new ReceiverLink(receiver, session, ++generation, credit.member(), control::execute);
        try {
            settlement.attached(link);
        } catch (ClientException | RuntimeException e) {
            receiver.closeAsync();
            throw e;
        }
        hook(link);
        warnIfRisky();
        return link;
    }

    /** Once per subscription: an address this broker makes non-durable loses messages; say so and what to use. */
    private void warnIfRisky() {
        if (addressWarned) {
            return;
        }
        String risk = broker.profile().addressRisk(spec.address());
        if (risk != null) {
            addressWarned = true;
            LOG.warn("Subscription '{}' consumes from '{}': {}", name, spec.address(), risk);
        }
    }

    /** Installs the engine hooks on a link (again on the receiver protonj2 re-creates at each reconnect attempt). */
    void hook(ReceiverLink link) {
        if (internals.hooksAvailable()) {
            link.hooks(internals.hook(link.receiver, new LinkEvents(link)));
        }
    }

    /** What the engine hooks report about one link, on the connection's I/O thread. */
    private final class LinkEvents implements HookEvents {
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
            control.execute(() -> lost.linkLost(link, what, false, condition, description));
        }

        @Override
        public void beyondCredit() {
            try {
                control.execute(() -> releasedBeyondCredit(link));
            } catch (RejectedExecutionException e) {
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
        observer.settled(name, null, v.outcome(), v.reason());
        if (link.firstBeyondCredit()) {
            LOG.warn("Subscription '{}' on '{}' (link {}): the broker ({}) sent a delivery beyond the link credit it "
                    + "was granted (a known RabbitMQ 3.x bug, rabbitmq-server#2597, gone with RabbitMQ 4's native "
                    + "AMQP 1.0). Every such delivery is released at once, unread, and the broker redelivers it; it "
                    + "is counted as released/beyond_credit. Said once per link.", name, spec.address(), link,
                    broker.profile());
        }
    }
}

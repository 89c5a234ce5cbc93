package org.acemq.amqp.consumer.internal;

import java.util.Collection;
import java.util.List;
import org.acemq.amqp.consumer.ConsumerHealth.State;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the consumer does when its connection comes up, is interrupted, comes back, or is lost for good: learn the
 * broker, probe the store, attach or re-account every subscription's link.
 */
final class ConnectionEvents implements ConnectorEvents {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionEvents.class);

    private final RuntimeConfig config;
    private final ConsumerState state;
    private final CurrentBroker broker;
    private final CreditAllocator allocator;
    private final StoreAccess store;
    private final StoreGate gate;
    private final SafeObserver observer;
    private final Collection<SessionHandle> sessions;
    private final List<Subscriber> subscribers;
    private final Runnable onConnected;

    /**
     * @param subscribers the consumer's subscribers (the list is filled after this is made)
     * @param onConnected told each time the connection comes up (first, again, or after protonj2 reconnected); must
     *     not block
     */
    ConnectionEvents(RuntimeConfig config, ConsumerState state, CurrentBroker broker, CreditAllocator allocator,
                     StoreAccess store, StoreGate gate, SafeObserver observer, Collection<SessionHandle> sessions,
                     List<Subscriber> subscribers, Runnable onConnected) {
        this.config = config;
        this.state = state;
        this.broker = broker;
        this.allocator = allocator;
        this.store = store;
        this.gate = gate;
        this.observer = observer;
        this.sessions = sessions;
        this.subscribers = subscribers;
        this.onConnected = onConnected;
    }

    @Override
    public void connected(BrokerProfile profile, Connection connection, boolean failFast) throws ClientException {
        broker.connected(profile);
        allocator.brokerDrains(profile.drainPerSpec());
        for (SessionHandle s : sessions) {
            s.connection(connection);
        }
        // A store that is down at start-up pauses the consumer from the first moment: no credit, no loss.
        try {
            store.probe();
        } catch (RuntimeException e) {
            gate.failure(e);
        }
        for (Subscriber s : subscribers) {
            if (s.suspended()) {
                continue; // stopped by the application: attached when it is started again
            }
            try {
                s.links().attach();
            } catch (ClientException | RuntimeException e) {
                if (failFast) {
                    throw e;
                }
                s.links().attachLater(e);
            }
        }
        boolean first = state.get() == State.STARTING;
        state.started();
        LOG.info("Consumer '{}' {}: {} subscription(s) on {}:{} ({})", config.name(),
                first ? "started" : "attached again", subscribers.size(), config.connection().host(),
                config.connection().port(), profile);
        onConnected.run();
    }

    @Override
    public void interrupted(Throwable cause, boolean first) {
        if (first && broker.profile().drainAnsweredAgainstSpec(cause)) {
            allocator.brokerDrains(false);
        }
        if (first) {
            observer.connectionInterrupted(true);
        }
        for (Subscriber s : subscribers) {
            s.links().connectionInterrupted(first);
        }
    }

    @Override
    public void reconnected(BrokerProfile profile) {
        if (broker.reconnectedTo(profile)) { // failed over to another broker
            allocator.brokerDrains(profile.drainPerSpec());
        }
        observer.connectionInterrupted(false);
        for (Subscriber s : subscribers) {
            s.links().connectionRestored();
        }
        onConnected.run();
    }

    @Override
    public void lost(Throwable cause) {
        observer.connectionInterrupted(true);
        for (Subscriber s : subscribers) {
            s.connectionLost();
        }
    }

    @Override
    public void restored() {
        observer.connectionInterrupted(false);
    }

    @Override
    public void failed() {
        state.failed();
    }

    @Override
    public boolean hasFailed() {
        return state.get() == State.FAILED;
    }
}

package org.acemq.amqp.consumer.internal;

/**
 * The identity of the broker the consumer is connected to: unknown until the first connection, replaced when the
 * consumer fails over to another broker. Read by every part whose behaviour depends on the broker.
 */
final class CurrentBroker {

    private volatile BrokerProfile profile = BrokerProfile.unknown();

    /** @return the broker's profile ({@link BrokerProfile#unknown()} before the first connection) */
    BrokerProfile profile() {
        return profile;
    }

    /** @param first the profile of the broker the consumer connected to first */
    void connected(BrokerProfile first) {
        profile = first;
    }

    /**
     * After a reconnect: the profile is replaced only if this is another broker (what was learnt about this one, such
     * as a refused {@code modified}, is kept).
     *
     * @param next the profile of the broker reconnected to
     * @return whether it is another broker
     */
    boolean reconnectedTo(BrokerProfile next) {
        if (next.toString().equals(profile.toString())) {
            return false;
        }
        profile = next;
        return true;
    }
}

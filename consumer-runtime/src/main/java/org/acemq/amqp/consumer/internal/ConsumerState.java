package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.consumer.ConsumerHealth.State;

/** Where a consumer is in its life (what health reports), changed by the consumer and by its connection's events. */
final class ConsumerState {

    private volatile State state = State.STARTING;

    State get() {
        return state;
    }

    /** The first connection is up and the subscriptions attached (or being re-attached). */
    void started() {
        if (state == State.STARTING) {
            state = State.RUNNING;
        }
    }

    /** The connection is gone for good, or the first one could not be made; nothing once the consumer closes. */
    void failed() {
        if (!closing()) {
            state = State.FAILED;
        }
    }

    void set(State next) {
        state = next;
    }

    /** @return whether the consumer is closing or closed */
    boolean closing() {
        return state == State.STOPPING || state == State.STOPPED;
    }
}

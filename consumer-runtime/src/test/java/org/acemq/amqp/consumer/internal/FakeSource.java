package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/** The intake's source for the stage tests: one link (the fixture's), and flags the test sets. */
final class FakeSource implements Intake.Source {

    private final ReceiverLink link;
    volatile boolean stopping;
    volatile boolean quiet;
    final List<ClientException> receiveFailures = new CopyOnWriteArrayList<>();

    FakeSource(ReceiverLink link) {
        this.link = link;
    }

    @Override
    public ReceiverLink awaitLink() {
        return stopping ? null : link;
    }

    @Override
    public boolean quiet() {
        return quiet || stopping;
    }

    public boolean stopping() {
        return stopping;
    }

    @Override
    public void receiveFailed(ReceiverLink from, ClientException failure) {
        receiveFailures.add(failure);
    }

    /** As {@link LinkKeeper#take}: counted against the link while it is valid. */
    @Override
    public Arrival take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp, long receivedNanos) {
        return Arrival.taken(amqp, from, from.take(), receivedNanos);
    }
}

package org.acemq.amqp.consumer.internal;

import org.apache.qpid.protonj2.client.Delivery;

/** One delivery from the moment a handler thread takes it until it is settled or abandoned. */
final class DeliveryTask implements Runnable {

    final SubscriptionRunner runner;
    final Delivery delivery;
    final long connectionGeneration;
    final long linkGeneration;
    final long receivedNanos;
    /** When the store granted the claim this delivery holds (System.nanoTime), or 0 while it holds none. */
    volatile long claimedNanos;
    /** The trace/observation scope of the running handler; set and cleared on the worker thread. */
    volatile DeliveryScope scope;
    private boolean finished;

    DeliveryTask(SubscriptionRunner runner, Delivery delivery, long connectionGeneration, long linkGeneration) {
        this.runner = runner;
        this.delivery = delivery;
        this.connectionGeneration = connectionGeneration;
        this.linkGeneration = linkGeneration;
        this.receivedNanos = System.nanoTime();
    }

    @Override
    public void run() {
        runner.process(this);
    }

    /** @return true the first time only, so a task frees its slot exactly once */
    synchronized boolean markFinished() {
        if (finished) {
            return false;
        }
        finished = true;
        return true;
    }
}

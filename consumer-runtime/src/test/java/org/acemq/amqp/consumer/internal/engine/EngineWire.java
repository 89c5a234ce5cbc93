package org.acemq.amqp.consumer.internal.engine;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/** What the engine package's wire tests share: a receiver opened as the runtime opens it, and latches. */
final class EngineWire {

    private EngineWire() {
    }

    /** @return a receiver of "orders" with credit window 0 and no auto-accept (as the runtime opens them), attached */
    static Receiver openReceiver(Connection connection) throws Exception {
        ReceiverOptions options = new ReceiverOptions().creditWindow(0).autoAccept(false);
        Receiver receiver = connection.openReceiver("orders", options);
        try {
            receiver.openFuture().get(5, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof ClientException c ? c : e;
        }
        return receiver;
    }

    /** Waits up to ten seconds (the tests' timeouts are longer); fails if the latch did not open. */
    static void await(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("a latch of the test did not open in time");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Link events the test does not look at. */
    static final class NoEvents implements HookEvents {
        @Override
        public void aborted() {
        }

        @Override
        public void drained(int unused) {
        }

        @Override
        public void closedByPeer(String condition, String description) {
        }

        @Override
        public void beyondCredit() {
        }
    }
}

package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.acemq.amqp.consumer.Ticker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * The take stage: the intake leader (a handler thread, {@link Schedule}) waits in {@code receive()} for one delivery
 * and takes what else the client has queued ({@code tryReceive()}), up to a bound, each counted against the link that
 * owns it. It reads nothing and decides nothing.
 *
 * <p><b>How far ahead it takes.</b> What is taken is claimed at once, and an admitted delivery's lease runs while it
 * waits for a thread. The intake takes at most what the threads can start within {@link #HORIZON} (from a moving
 * average of the handler's run time), but never fewer than one per idle thread, and never more than the
 * subscription's window ({@code concurrency + prefetch}), less what waits already, or {@link #MAX_BATCH}; a batch
 * handler's subscription takes at least a whole batch.
 */
final class Intake {

    /**
     * Admitted deliveries should start within about this long. It bounds what a crash leaves claimed but not started
     * (those wait for their lease to end before another consumer may take them), not the lease itself: a waiting
     * claim is renewed with the running ones. Half a second lets a handler of up to a few milliseconds fill whole
     * batches ({@link #MAX_BATCH}), so that a slower handler does not pay more claim commits per message.
     */
    static final Duration HORIZON = Duration.ofMillis(500);
    /** The most deliveries taken (and claimed in one store call) at once. */
    static final int MAX_BATCH = 256;

    /** Where the intake takes deliveries from: the subscription's link over time ({@link LinkKeeper}). */
    interface Source {

        /** @return the link to take from, waiting while there is none; null once the subscription stops */
        ReceiverLink awaitLink();

        /** @return whether nothing may be taken now (the consumer closes, or the application stopped it) */
        boolean quiet();

        /** A receive on {@code link} failed (the link or the connection ended). */
        void receiveFailed(ReceiverLink link, ClientException failure);

        /**
         * Counts a delivery taken from {@code from}'s receiver against the link that owns it.
         *
         * @return what arrived, not read yet
         */
        Arrival take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp, long receivedNanos);
    }

    private final Source links;
    private final HandlerTimes times;
    private final Ticker ticker;
    private final int concurrency;
    private final int window;
    private final int minimum;
    private final long horizonNanos;

    /**
     * @param times the handlers' run time (how far ahead to take)
     * @param minimum the fewest to take when the client has them (a whole batch for a batch handler, else 1)
     * @param horizonNanos admitted deliveries should start within about this long ({@link #horizonNanos(long)})
     */
    Intake(int concurrency, int prefetch, int minimum, Source links, HandlerTimes times, Ticker ticker,
           long horizonNanos) {
        this.links = links;
        this.times = times;
        this.ticker = ticker;
        this.concurrency = concurrency;
        this.window = concurrency + prefetch;
        this.minimum = minimum;
        this.horizonNanos = horizonNanos;
    }

    /**
     * @param beatNanos the lease renewal period, 0 if leases are not renewed (or unknown)
     * @return how soon admitted deliveries should start: {@link #HORIZON}, or a quarter of the renewal period if less
     */
    static long horizonNanos(long beatNanos) {
        return beatNanos > 0 ? Math.min(HORIZON.toNanos(), beatNanos / 4) : HORIZON.toNanos();
    }

    /**
     * On the intake leader: waits for one delivery, then takes what else is queued, up to the bound.
     *
     * @param slot the leader's slot (it may be woken from {@code receive()} by a stop)
     * @param idle how many other threads wait for work
     * @param waiting how many admitted deliveries wait already
     * @param maxWaitNanos how long to wait for the first delivery, or 0 for as long as it takes
     * @return what was taken, in order; empty if nothing (the subscription stops, the receive failed or timed out)
     */
    List<Arrival> take(HandlerSlot slot, int idle, int waiting, long maxWaitNanos) {
        ReceiverLink link = links.awaitLink();
        if (link == null) {
            return List.of();
        }
        org.apache.qpid.protonj2.client.Delivery amqp = null;
        ClientException failure = null;
        slot.receiving();
        try {
            if (!links.quiet()) {
                amqp = maxWaitNanos > 0 ? link.receiver.receive(maxWaitNanos, java.util.concurrent.TimeUnit.NANOSECONDS)
                        : link.receiver.receive();
            }
        } catch (ClientException e) {
            failure = e;
        } catch (RuntimeException e) {
            failure = new ClientException(Errors.describe(e), e);
        } finally {
            slot.received();
        }
        if (amqp == null) {
            if (failure != null && !links.quiet() && !(failure.getCause() instanceof InterruptedException)) {
                links.receiveFailed(link, failure);
            }
            return List.of();
        }
        int limit = limit(idle, waiting);
        List<Arrival> batch = new ArrayList<>(Math.min(limit, 64));
        batch.add(take(link, amqp));
        try {
            while (batch.size() < limit && !links.quiet() && (amqp = link.receiver.tryReceive()) != null) {
                batch.add(take(link, amqp));
            }
        } catch (ClientException | RuntimeException e) {
            // the link is failing: the next receive() reports it; what was taken is admitted as usual
        }
        return batch;
    }

    /**
     * @return how many deliveries this intake may take: what the threads can start within the horizon (at least one
     *     per idle thread, the leader included, and at least the minimum), less what is admitted and waiting already
     */
    private int limit(int idle, int waiting) {
        long avg = Math.max(1, times.averageNanos());
        long startable = Math.max(Math.max(concurrency * horizonNanos / avg, idle + 1L), minimum);
        long room = Math.min(startable, window) - waiting;
        return (int) Math.max(1, Math.min(room, Math.max(MAX_BATCH, minimum)));
    }

    /** Takes one delivery without waiting (the shutdown stage takes what is left one by one). */
    Arrival take(ReceiverLink from, org.apache.qpid.protonj2.client.Delivery amqp) {
        return links.take(from, amqp, ticker.read());
    }
}

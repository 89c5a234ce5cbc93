package org.acemq.amqp.consumer;

/**
 * A source of nanosecond time for the consumer: how long deliveries and claims have been held, when a lease heartbeat
 * is due, when a confirm retry gives up, when a transaction's batch time is up. Pass your own to
 * {@link AmqpConsumer.Builder#ticker(Ticker)} (with a matching {@link Scheduler}) to move time in tests instead of
 * sleeping; the default is {@link #system()}.
 *
 * <p>Only differences between two readings mean anything (as with {@link System#nanoTime()}). Must be thread-safe and
 * cheap: it is read on every delivery.
 */
@FunctionalInterface
public interface Ticker {

    /** @return the current time in nanoseconds, from an arbitrary origin */
    long read();

    /** @return the ticker backed by {@link System#nanoTime()} */
    static Ticker system() {
        return System::nanoTime;
    }
}

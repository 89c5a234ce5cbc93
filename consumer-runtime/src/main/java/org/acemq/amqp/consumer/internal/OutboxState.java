package org.acemq.amqp.consumer.internal;

import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.Ticker;

/**
 * What the consumer knows of its store's outbox between two reads: the status the sweep last read (so that health and
 * the meters never query the store), and the last dispatch that failed. The oldest message's age is computed once per
 * read, from the store's timestamp and this process's wall clock, and then grows with the consumer's {@link Ticker},
 * so that it goes on growing while the store cannot be read (and a test can move it with its own ticker).
 *
 * <p>Thread-safe: the sweep writes the status, handler threads and the sweep report failures, anyone reads.
 */
final class OutboxState {

    /** One read of the store's status: the oldest age as computed then, and when (by the ticker). */
    private record Read(long pending, long oldestAgeNanos, long failing, long readAt) {
    }

    private final Ticker ticker;
    private final Clock clock;
    private final Duration maxAge;
    private volatile Read last;
    private volatile String lastError;
    /** Failures reported so far: a read that began before the latest one must not clear its error. */
    private final AtomicLong failures = new AtomicLong();

    /**
     * @param ticker the consumer's ticker (ages grow with it between reads)
     * @param clock the wall clock the store's timestamps are compared with
     * @param maxAge the oldest age still healthy
     */
    OutboxState(Ticker ticker, Clock clock, Duration maxAge) {
        this.ticker = ticker;
        this.clock = clock;
        this.maxAge = maxAge;
        this.last = new Read(0, -1, 0, ticker.read());
    }

    /**
     * @return a mark to pass to {@link #read(OutboxStore.Status, long)}, taken before the store is asked for its status
     */
    long mark() {
        return failures.get();
    }

    /**
     * @param status what the store just answered
     * @param mark {@link #mark()} as taken before the store was asked: the last error is cleared only when the store
     *     reports no failing message and no failure was reported since (the store's answer may predate its record)
     */
    void read(OutboxStore.Status status, long mark) {
        long age = -1;
        if (status.oldestPending() != null) {
            // the store's clock against ours: a store ahead of us reads as zero, never as a negative age
            age = Math.max(0, Duration.between(status.oldestPending(), clock.instant()).toNanos());
        }
        last = new Read(status.pending(), age, status.failing(), ticker.read());
        if (status.failing() == 0 && failures.get() == mark) {
            lastError = null;
        }
    }

    /** @param error why a dispatch from the outbox failed (reported in health until nothing fails) */
    void failed(String error) {
        lastError = LogSafe.text(error);
        failures.incrementAndGet();
    }

    /** @return the outbox as last read, its oldest age brought up to now */
    ConsumerHealth.OutboxHealth health() {
        Read r = last;
        Duration oldest = r.oldestAgeNanos < 0 ? Duration.ZERO
                : Duration.ofNanos(r.oldestAgeNanos + Math.max(0, ticker.read() - r.readAt));
        return new ConsumerHealth.OutboxHealth(r.pending, oldest, r.failing, maxAge, lastError);
    }
}

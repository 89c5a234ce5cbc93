package org.acemq.amqp.consumer.internal;

import java.time.Clock;
import java.time.Duration;
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

    /** @param status what the store just answered */
    void read(OutboxStore.Status status) {
        long age = -1;
        if (status.oldestPending() != null) {
            // the store's clock against ours: a store ahead of us reads as zero, never as a negative age
            age = Math.max(0, Duration.between(status.oldestPending(), clock.instant()).toNanos());
        }
        last = new Read(status.pending(), age, status.failing(), ticker.read());
        if (status.failing() == 0) {
            lastError = null;
        }
    }

    /** @param error why a dispatch from the outbox failed (reported in health until nothing fails) */
    void failed(String error) {
        lastError = LogSafe.text(error);
    }

    /** @return the outbox as last read, its oldest age brought up to now */
    ConsumerHealth.OutboxHealth health() {
        Read r = last;
        Duration oldest = r.oldestAgeNanos < 0 ? Duration.ZERO
                : Duration.ofNanos(r.oldestAgeNanos + Math.max(0, ticker.read() - r.readAt));
        return new ConsumerHealth.OutboxHealth(r.pending, oldest, r.failing, maxAge, lastError);
    }
}

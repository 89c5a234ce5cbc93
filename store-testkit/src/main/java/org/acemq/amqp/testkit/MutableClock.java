package org.acemq.amqp.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link Clock} that stands still until a test moves it, so that leases and retention can be tested by moving
 * time instead of sleeping.
 *
 * <p>Millisecond resolution. Thread-safe: {@link #advance} may be called while other threads read the clock; every
 * reader sees either the old or the new time, never a torn value. Time never moves on its own and never backwards
 * (there is no setter that could move it back).
 */
public final class MutableClock extends Clock {

    private final AtomicLong epochMillis;
    private final ZoneId zone;

    private MutableClock(AtomicLong epochMillis, ZoneId zone) {
        this.epochMillis = epochMillis;
        this.zone = zone;
    }

    /**
     * @param start the instant the clock shows until it is advanced (truncated to milliseconds)
     * @return a clock in UTC
     */
    public static MutableClock startingAt(Instant start) {
        Objects.requireNonNull(start, "start must not be null");
        return new MutableClock(new AtomicLong(start.toEpochMilli()), ZoneOffset.UTC);
    }

    /** @return a clock showing 2030-01-01T00:00:00Z, a fixed, unremarkable instant */
    public static MutableClock create() {
        return startingAt(Instant.parse("2030-01-01T00:00:00Z"));
    }

    /**
     * Moves the clock forward.
     *
     * @param amount how far; must not be negative
     * @return the new time
     * @throws IllegalArgumentException if {@code amount} is negative
     */
    public Instant advance(Duration amount) {
        Objects.requireNonNull(amount, "amount must not be null");
        if (amount.isNegative()) {
            throw new IllegalArgumentException("amount must be >= 0, but was " + amount);
        }
        return Instant.ofEpochMilli(epochMillis.addAndGet(amount.toMillis()));
    }

    @Override
    public long millis() {
        return epochMillis.get();
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(epochMillis.get());
    }

    @Override
    public ZoneId getZone() {
        return zone;
    }

    /** @return a view in another zone that shares this clock's time (advancing either advances both) */
    @Override
    public Clock withZone(ZoneId newZone) {
        Objects.requireNonNull(newZone, "zone must not be null");
        return newZone.equals(zone) ? this : new MutableClock(epochMillis, newZone);
    }

    @Override
    public String toString() {
        return "MutableClock[" + instant() + "]";
    }
}

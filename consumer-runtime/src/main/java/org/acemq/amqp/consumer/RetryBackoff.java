package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.Objects;

/**
 * How long a delivery whose handler failed transiently is held before it goes back to the broker: exponential with
 * jitter. Before the retry that follows attempt {@code n} the delay is {@code min(max, first * multiplier^(n-1))},
 * shortened by a random fraction of up to {@code jitter} of itself, so a burst of failures does not come back as a
 * burst. While held, the delivery stays unsettled and keeps its slot of the subscription's in-flight budget; the
 * handler thread moves on at once.
 *
 * @param first the delay after the first failed attempt; zero disables holding (the delivery goes back at once)
 * @param max the longest delay
 * @param multiplier the growth per attempt, at least 1
 * @param jitter the largest fraction taken off a delay at random, 0 (none) to 1
 */
public record RetryBackoff(Duration first, Duration max, double multiplier, double jitter) {

    /** The default: 100 ms, doubling up to 10 s, up to half of each delay taken off at random. */
    public static final RetryBackoff DEFAULT = new RetryBackoff(Duration.ofMillis(100), Duration.ofSeconds(10), 2.0,
            0.5);

    private static final RetryBackoff NONE = new RetryBackoff(Duration.ZERO, Duration.ZERO, 1.0, 0.0);

    /**
     * Validates: a failure names the setting, the rule and the value.
     *
     * @param first the delay after the first failed attempt; zero disables holding
     * @param max the longest delay, at least {@code first}
     * @param multiplier the growth per attempt, at least 1
     * @param jitter the largest fraction taken off a delay at random, 0 to 1
     */
    public RetryBackoff {
        Validation.notNegative("retryBackoff first", first);
        Validation.notNegative("retryBackoff max", max);
        if (max.compareTo(first) < 0) {
            throw new IllegalArgumentException("retryBackoff max must be >= first (" + first + "), but was " + max);
        }
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new IllegalArgumentException("retryBackoff multiplier must be >= 1, but was " + multiplier);
        }
        if (!(jitter >= 0.0 && jitter <= 1.0)) {
            throw new IllegalArgumentException("retryBackoff jitter must be in 0..1, but was " + jitter);
        }
    }

    /** @return no holding: a failed delivery goes back at once (the broker's own redelivery delay applies) */
    public static RetryBackoff none() {
        return NONE;
    }

    /**
     * @param first the delay after the first failed attempt
     * @param max the longest delay
     * @param multiplier the growth per attempt
     * @param jitter the largest fraction taken off at random
     * @return the back-off
     */
    public static RetryBackoff of(Duration first, Duration max, double multiplier, double jitter) {
        return new RetryBackoff(Objects.requireNonNull(first, "retryBackoff first must not be null"),
                Objects.requireNonNull(max, "retryBackoff max must not be null"), multiplier, jitter);
    }

    /** @return whether failed deliveries are held at all */
    public boolean enabled() {
        return !first.isZero();
    }
}

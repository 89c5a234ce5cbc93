package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.Objects;

/** Argument checks whose messages name the setting, the rule and the value. */
final class Validation {

    private Validation() {
    }

    static String notBlank(String name, String value) {
        Objects.requireNonNull(value, name + " must not be null");
        if (value.isBlank()) {
            throw new IllegalArgumentException(name + " must not be blank, but was '" + value + "'");
        }
        return value;
    }

    static int port(String name, int value) {
        if (value < 1 || value > 65535) {
            throw new IllegalArgumentException(name + " must be in 1..65535, but was " + value);
        }
        return value;
    }

    static int atLeast(String name, int min, int value) {
        if (value < min) {
            throw new IllegalArgumentException(name + " must be >= " + min + ", but was " + value);
        }
        return value;
    }

    static long atLeast(String name, long min, long value) {
        if (value < min) {
            throw new IllegalArgumentException(name + " must be >= " + min + ", but was " + value);
        }
        return value;
    }

    static Duration positive(String name, Duration value) {
        Objects.requireNonNull(value, name + " must not be null");
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be > 0, but was " + value);
        }
        return value;
    }

    static Duration notNegative(String name, Duration value) {
        Objects.requireNonNull(value, name + " must not be null");
        if (value.isNegative()) {
            throw new IllegalArgumentException(name + " must be >= 0, but was " + value);
        }
        return value;
    }
}

package org.acemq.amqp.consumer.internal;

import java.math.BigInteger;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.UnsignedByte;
import org.apache.qpid.protonj2.types.UnsignedInteger;
import org.apache.qpid.protonj2.types.UnsignedLong;
import org.apache.qpid.protonj2.types.UnsignedShort;

/** Converts protonj2's AMQP value types to plain JDK types, so none of them reaches application code. */
final class AmqpValues {

    private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

    private AmqpValues() {
    }

    static Object toJdk(Object value) {
        if (value == null || value instanceof String || value instanceof Boolean || value instanceof Integer
                || value instanceof Long || value instanceof Double) {
            return value;
        }
        if (value instanceof Binary b) {
            return b.asByteArray();
        }
        if (value instanceof Symbol s) {
            return s.toString();
        }
        if (value instanceof UnsignedLong n) {
            long v = n.longValue();
            return v >= 0 ? Long.valueOf(v) : BigInteger.valueOf(v).add(TWO_64);
        }
        if (value instanceof UnsignedInteger n) {
            return n.longValue();
        }
        if (value instanceof UnsignedShort n) {
            return n.intValue();
        }
        if (value instanceof UnsignedByte n) {
            return n.shortValue();
        }
        if (value instanceof Date d) {
            return d.toInstant();
        }
        if (value instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put(toJdk(k), toJdk(v)));
            return Collections.unmodifiableMap(out);
        }
        if (value instanceof List<?> l) {
            List<Object> out = new ArrayList<>(l.size());
            l.forEach(v -> out.add(toJdk(v)));
            return Collections.unmodifiableList(out);
        }
        if (value instanceof Object[] array) {
            List<Object> out = new ArrayList<>(array.length);
            for (Object v : array) {
                out.add(toJdk(v));
            }
            return Collections.unmodifiableList(out);
        }
        return value;
    }

    static Instant timestamp(long millis) {
        return millis == 0 ? null : Instant.ofEpochMilli(millis);
    }
}

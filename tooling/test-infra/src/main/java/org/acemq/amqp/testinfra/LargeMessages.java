package org.acemq.amqp.testinfra;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.acemq.amqp.api.Envelope;
import org.apache.qpid.protonj2.client.AdvancedMessage;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.messaging.AmqpSequence;
import org.apache.qpid.protonj2.types.messaging.AmqpValue;

/**
 * Large messages of every body type and with large sections, generated from their kind and size alone (so a handler
 * can regenerate what was sent and compare it with what it got, without the test keeping megabytes around). Shared by
 * the runtime's {@code LargeMessagesIT} (embedded Artemis) and the interoperability suite's RabbitMQ run.
 */
public final class LargeMessages {

    /** What is large in the message. */
    public enum Kind {
        /** A data section of random bytes. */
        DATA,
        /** An amqp-value string (with multi-byte characters). */
        STRING,
        /** An amqp-value map of strings, binaries, symbols, longs, UUIDs and small lists. */
        MAP,
        /** An amqp-value list of the same values. */
        LIST,
        /** An amqp-sequence section of the same values. */
        SEQUENCE,
        /** Application properties (a small body). */
        PROPERTIES,
        /** Message annotations (a small body). */
        ANNOTATIONS
    }

    public static final List<Integer> SIZES = List.of(60 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024);

    private LargeMessages() {
    }

    /** @return the message id of this kind and size */
    public static String id(Kind kind, int size) {
        return kind + "-" + size;
    }

    /** @return the message of this kind and about this many bytes, with {@link #id} as its message-id */
    public static Message<Object> message(Kind kind, int size) throws ClientException {
        Random random = new Random(31L * kind.ordinal() + size);
        Message<Object> m = switch (kind) {
            case DATA -> {
                byte[] bytes = new byte[size];
                random.nextBytes(bytes);
                yield Message.create((Object) bytes);
            }
            case STRING -> Message.create((Object) text(random, size));
            case MAP -> Message.create((Object) map(random, size));
            case LIST -> AdvancedMessage.create().addBodySection(new AmqpValue<>(list(random, size)));
            case SEQUENCE -> AdvancedMessage.create().addBodySection(new AmqpSequence<>(list(random, size)));
            case PROPERTIES, ANNOTATIONS -> Message.create((Object) ("small body of " + kind));
        };
        if (kind == Kind.PROPERTIES || kind == Kind.ANNOTATIONS) {
            int bytes = 0;
            for (int i = 0; bytes < size; i++) {
                String value = text(random, 1000);
                if (kind == Kind.PROPERTIES) {
                    m.property("p" + i, i % 5 == 4 ? (Object) random.nextLong() : value);
                } else {
                    m.annotation("x-opt-acemq-" + i, i % 5 == 4 ? (Object) Symbol.valueOf("s" + i) : value);
                }
                bytes += 1000;
            }
        }
        return m.messageId(id(kind, size)).durable(true);
    }

    /**
     * Whether the handler saw exactly what was sent: the body (a data section byte for byte, protonj2's binaries and
     * symbols as the JDK types the envelope gives), every application property, and every annotation sent (a broker
     * may add annotations of its own).
     */
    public static boolean sameAsSent(Kind kind, int size, Envelope e) throws ClientException {
        Message<Object> sent = message(kind, size);
        if (!same(e.body(), sent.body())) {
            return false;
        }
        Map<String, Object> properties = new LinkedHashMap<>();
        sent.forEachProperty(properties::put);
        if (!same(e.applicationProperties(), properties)) {
            return false;
        }
        Map<String, Object> annotations = new LinkedHashMap<>();
        sent.forEachAnnotation(annotations::put);
        for (Map.Entry<String, Object> a : annotations.entrySet()) {
            if (!same(e.annotations().get(a.getKey()), a.getValue())) {
                return false;
            }
        }
        return true;
    }

    private static String text(Random random, int bytes) {
        StringBuilder s = new StringBuilder(bytes);
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 é€😀";
        int n = 0;
        while (n < bytes) {
            int cp = alphabet.codePointAt(alphabet.offsetByCodePoints(0, random.nextInt(alphabet.codePointCount(0,
                    alphabet.length()))));
            s.appendCodePoint(cp);
            n += new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
        }
        return s.toString();
    }

    private static Object value(Random random, int i) {
        return switch (i % 6) {
            case 0 -> text(random, 600);
            case 1 -> {
                byte[] b = new byte[600];
                random.nextBytes(b);
                yield new Binary(b);
            }
            case 2 -> Symbol.valueOf("symbol-" + i);
            case 3 -> random.nextLong();
            case 4 -> new UUID(random.nextLong(), random.nextLong());
            default -> List.of((long) i, "n" + i, new Binary(new byte[] {(byte) i}), true);
        };
    }

    private static Map<String, Object> map(Random random, int bytes) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; bytes > 0; i++) {
            map.put("entry-" + i, value(random, i));
            bytes -= i % 6 < 2 ? 610 : 40;
        }
        return map;
    }

    private static List<Object> list(Random random, int bytes) {
        List<Object> list = new ArrayList<>();
        for (int i = 0; bytes > 0; i++) {
            list.add(value(random, i));
            bytes -= i % 6 < 2 ? 605 : 35;
        }
        return list;
    }

    /** Whether {@code seen} (the envelope's JDK form) equals {@code sent} (protonj2's types), in order. */
    public static boolean same(Object seen, Object sent) {
        if (sent == null || seen == null) {
            return sent == seen;
        }
        if (sent instanceof byte[] bytes) {
            return seen instanceof byte[] b && Arrays.equals(b, bytes);
        }
        if (sent instanceof Binary b) {
            return seen instanceof byte[] bytes && Arrays.equals(bytes, b.asByteArray());
        }
        if (sent instanceof Symbol s) {
            return s.toString().equals(seen);
        }
        if (sent instanceof Map<?, ?> m) {
            if (!(seen instanceof Map<?, ?> n) || n.size() != m.size()) {
                return false;
            }
            var a = m.entrySet().iterator();
            var b = n.entrySet().iterator();
            while (a.hasNext()) {
                var x = a.next();
                var y = b.next();
                if (!same(y.getKey(), x.getKey()) || !same(y.getValue(), x.getValue())) {
                    return false;
                }
            }
            return true;
        }
        if (sent instanceof List<?> l) {
            if (!(seen instanceof List<?> k) || k.size() != l.size()) {
                return false;
            }
            for (int i = 0; i < l.size(); i++) {
                if (!same(k.get(i), l.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return sent.equals(seen);
    }
}

package org.acemq.amqp.benchmarks.e2e;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.buffer.ProtonBufferAllocator;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.impl.ClientMessageSupport;
import org.apache.qpid.protonj2.types.Binary;

/**
 * What the read stage's work on the encoded message costs, without JMH, old and new side by side in one run: a
 * message of one frame decoded by protonj2 and fingerprinted as before ({@code old}: decode, then the fingerprint of
 * the decoded body), and the same with the step added before the decode ({@code new}: the body's form read from the
 * encoding by the runtime's internal {@code BodyForm}, then decode and fingerprint). For a body of bytes or text the
 * fingerprint itself is computed as before, so the difference is the added step. Rounds alternate (old first in odd
 * rounds, new first in even ones); each prints the thread's CPU nanoseconds per message (CPU time, so that other
 * processes on a shared machine do not count). The reflective calls add the same few nanoseconds to both. The other
 * step the read stage added, {@code WholePayload} (a field read and a type check for a message of one frame), needs a
 * client delivery and is not in the loop. For a structured body (the map row), the {@code old} column is the form
 * computed from the decoded message, the runtime's fallback when it cannot read the encoding. See docs/benchmarks.md.
 *
 * <pre>
 * java -jar tooling/benchmarks/target/acemq-benchmarks.jar read [--iterations 1000000] [--rounds 6]
 * </pre>
 */
public final class ReadCost {

    private ReadCost() {
    }

    /**
     * @param args {@code --iterations N}, {@code --rounds N}
     * @throws Exception if the runtime's internal code cannot be reached
     */
    public static void main(String[] args) throws Exception {
        int iterations = 1_000_000;
        int rounds = 6;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < 5; i++) {
            map.put("k" + i, "value-" + i);
            map.put("b" + i, new Binary(new byte[] {(byte) i, 1, 2}));
        }
        System.out.println("| body | bytes encoded | old CPU ns/msg by round | new CPU ns/msg by round | old median | "
                + "new median | new / old |\n|---|---:|---|---|---:|---:|---:|");
        row("data, " + EndToEndBenchmark.BODY + " bytes (the e2e benchmark's)",
                Message.create(new byte[EndToEndBenchmark.BODY]).messageId("id-1"), iterations, rounds);
        row("data, 4096 bytes", Message.create(new byte[4096]).messageId("id-1"), iterations, rounds);
        row("amqp-value string, 100 characters", Message.create("x".repeat(100)).messageId("id-1"), iterations,
                rounds);
        // for a structured body "old" is the form computed from the decoded message (the runtime's fallback), not the
        // code before the form existed (whose result was not a function of the message)
        row("amqp-value map, 10 entries (old column: its form from the decoded message, the fallback)",
                Message.create((Object) map).messageId("id-1"), iterations, rounds);
    }

    private static void row(String name, Message<?> message, int iterations, int rounds) throws Exception {
        ProtonBuffer encoded = message.toAdvancedMessage().encode(null);
        byte[] bytes = new byte[encoded.getReadableBytes()];
        encoded.readBytes(bytes, 0, bytes.length);
        ProtonBuffer buffer = ProtonBufferAllocator.defaultAllocator().copy(bytes).convertToReadOnly();

        Class<?> keys = Class.forName("org.acemq.amqp.consumer.internal.Keys");
        Class<?> form = Class.forName("org.acemq.amqp.consumer.internal.BodyForm");
        Constructor<?> c = keys.getDeclaredConstructor(Subscription.class, String.class);
        c.setAccessible(true);
        Object k = c.newInstance(Subscription.builder("bench", e -> { }).build(), null);
        Method fingerprint = keys.getDeclaredMethod("fingerprint", Message.class, form);
        fingerprint.setAccessible(true);
        Method scan = form.getDeclaredMethod("scan", ProtonBuffer.class);
        scan.setAccessible(true);
        Field asDecoded = form.getDeclaredField("AS_DECODED");
        asDecoded.setAccessible(true);
        Object decodedForm = asDecoded.get(null);

        Step old = () -> {
            buffer.setReadOffset(0);
            Message<?> m = ClientMessageSupport.decodeMessage(buffer, a -> { });
            return ((String) fingerprint.invoke(k, m, decodedForm)).length();
        };
        Step added = () -> {
            buffer.setReadOffset(0);
            Object f = scan.invoke(null, buffer);
            Message<?> m = ClientMessageSupport.decodeMessage(buffer, a -> { });
            return ((String) fingerprint.invoke(k, m, f)).length();
        };
        time(old, iterations); // warm-up
        time(added, iterations);
        double[] oldNs = new double[rounds];
        double[] newNs = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            if (r % 2 == 0) {
                oldNs[r] = time(old, iterations);
                newNs[r] = time(added, iterations);
            } else {
                newNs[r] = time(added, iterations);
                oldNs[r] = time(old, iterations);
            }
        }
        double o = median(oldNs);
        double n = median(newNs);
        System.out.printf(Locale.ROOT, "| %s | %d | %s | %s | %.0f | %.0f | %.2f |%n", name, bytes.length, each(oldNs),
                each(newNs), o, n, n / o);
    }

    private interface Step {
        int run() throws Exception;
    }

    private static double time(Step step, int iterations) throws Exception {
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        int sink = 0;
        long t0 = cpu.getCurrentThreadCpuTime();
        for (int i = 0; i < iterations; i++) {
            sink += step.run();
        }
        double ns = (cpu.getCurrentThreadCpuTime() - t0) / (double) iterations;
        if (sink == 42) {
            System.out.println();
        }
        return ns;
    }

    private static String each(double[] ns) {
        StringBuilder s = new StringBuilder();
        for (double v : ns) {
            s.append(s.length() == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.0f", v));
        }
        return s.toString();
    }

    private static double median(double[] ns) {
        double[] sorted = ns.clone();
        Arrays.sort(sorted);
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2]
                : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }
}

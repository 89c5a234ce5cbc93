package org.acemq.amqp.benchmarks.e2e;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.Locale;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;

/**
 * What computing one message's fingerprint costs, without JMH: the runtime's own code (its internal {@code Keys},
 * reached by reflection) in a timed loop on one thread, over the benchmark's 100-byte Data body and a 4 KiB one, for
 * {@code Fingerprint.body()} and {@code Fingerprint.body().withProperties("orderId")}. Rounds of {@code --iterations}
 * calls after as many warm-up calls; prints the thread's CPU nanoseconds per call for each round (CPU time, so that
 * other processes on a shared machine do not count). The reflective call adds a few nanoseconds. See
 * docs/benchmarks.md.
 *
 * <pre>
 * java -jar tooling/benchmarks/target/acemq-benchmarks.jar fingerprint [--iterations 2000000] [--rounds 5]
 * </pre>
 */
public final class FingerprintCost {

    private FingerprintCost() {
    }

    /**
     * @param args {@code --iterations N}, {@code --rounds N}
     * @throws Exception if the runtime's fingerprint code cannot be reached
     */
    public static void main(String[] args) throws Exception {
        int iterations = 2_000_000;
        int rounds = 5;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        System.out.println("| fingerprint | body bytes | CPU ns per message, by round | median |\n|---|---:|---|---:|");
        for (int size : new int[] {EndToEndBenchmark.BODY, 4096}) {
            Message<byte[]> m = Message.create(new byte[size]).messageId("id-1").property("orderId", "o-1");
            row("`Fingerprint.body()`", Fingerprint.body(), m, size, iterations, rounds);
            row("`Fingerprint.body().withProperties(\"orderId\")`", Fingerprint.body().withProperties("orderId"), m,
                    size, iterations, rounds);
        }
    }

    private static void row(String name, Fingerprint fp, Message<byte[]> m, int size, int iterations, int rounds)
            throws Exception {
        Class<?> keys = Class.forName("org.acemq.amqp.consumer.internal.Keys");
        Constructor<?> c = keys.getDeclaredConstructor(Subscription.class, String.class);
        c.setAccessible(true);
        Object k = c.newInstance(Subscription.builder("bench", e -> { }).fingerprint(fp).build(), null);
        Method f = keys.getDeclaredMethod("fingerprint", Message.class);
        f.setAccessible(true);
        int sink = 0;
        for (int i = 0; i < iterations; i++) {
            sink += ((String) f.invoke(k, m)).length();
        }
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        double[] ns = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            long t0 = cpu.getCurrentThreadCpuTime();
            for (int i = 0; i < iterations; i++) {
                sink += ((String) f.invoke(k, m)).length();
            }
            ns[r] = (cpu.getCurrentThreadCpuTime() - t0) / (double) iterations;
        }
        if (sink == 42) {
            System.out.println();
        }
        StringBuilder each = new StringBuilder();
        for (double v : ns) {
            each.append(each.length() == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.0f", v));
        }
        double[] sorted = ns.clone();
        java.util.Arrays.sort(sorted);
        System.out.printf(Locale.ROOT, "| %s | %d | %s | %.0f |%n", name, size, each, sorted[rounds / 2]);
    }
}

package org.acemq.amqp.benchmarks.e2e;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.DeliveryMode;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.SenderOptions;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * Publish → handler latency at a fixed publish rate, raw protonj2 against the runtime, with an open-loop load
 * generator whose reached rate is checked.
 *
 * <p>Load generator: {@code publishers} connections, one sender and one thread each, sending <b>pre-settled</b>
 * (at-most-once: no disposition per message from the broker, no tracker to wait for) messages that are built before
 * the clock starts. Message {@code g} (0, 1, 2, … over all publishers, interleaved) is due at
 * {@code start + g / rate}; a publisher parks until the due time of its next message (no spinning: on a small box a
 * spinning publisher steals the CPU the broker and the consumer need) and, if it is late, sends the overdue messages
 * back to back. The body carries the scheduled time, the time of the actual {@code send()} and the sequence number;
 * the consumer in the same JVM records {@code System.nanoTime()} − stamp, so latency counts from the <b>scheduled</b>
 * send time (a late publisher is charged to the latency, no coordinated omission), and from the actual send as a
 * second figure.
 *
 * <p>Full load: the highest rate at which publishing and a raw protonj2 consumer together keep up, found with short
 * probes (geometric ramp, then bisection): a probe passes if the publishers reach ≥ 97 % of the rate, the backlog
 * (sent − consumed) when they finish is at most 20 ms worth of messages and the median latency from the scheduled send
 * time is at most 5 ms (a median above that means messages were queueing for most of the probe, at the publisher or
 * at the broker, even if the backlog drained by the end). Half load is half of that.
 */
final class PacedLatency {

    /** What the benchmark needs from its environment. */
    interface Env {
        Client client();

        int port();

        String queue(String prefix);

        InMemoryIdempotencyStore memoryStore();
    }

    static final String RAW = "raw";
    static final String RUNTIME = "memory-4";
    /** Diagnostic: raw protonj2 plus the one thread hop the runtime adds (receiving thread → 4-thread pool). */
    static final String RAW_POOL4 = "raw-pool4";
    private static final String HOST = "127.0.0.1";
    private static final int STAMP_SCHEDULED = 0;
    private static final int STAMP_SENT = 8;
    private static final int STAMP_SEQ = 16;
    /** A probe whose median latency (from the scheduled send) exceeds this has queued: it did not keep up. */
    static final long PROBE_MAX_P50_NANOS = 5_000_000L;

    private final Env env;
    private final int publishers;
    private final StringBuilder probeLog = new StringBuilder();

    PacedLatency(Env env, int publishers) {
        this.env = env;
        this.publishers = publishers;
    }

    // ------------------------------------------------------------------ results

    /** One paced measurement: latencies in ns (sorted, warm-up dropped) and what the publishers achieved. */
    record Run(String mode, double requested, double reached, long[] fromScheduled, long[] fromSent, int received,
               int total, long backlogAtEnd, long drainNanos, String load) {
        boolean rateMet() {
            return reached >= 0.95 * requested;
        }

        boolean complete() {
            return received == total;
        }

        boolean valid() {
            return rateMet() && complete();
        }
    }

    // ------------------------------------------------------------------ one paced run

    /**
     * Attaches a fresh consumer of the given mode to a fresh queue, publishes {@code total} messages at {@code rate}
     * per second and waits (≤ 30 s) until all are consumed.
     *
     * @param dropFraction the leading fraction of messages (by sequence) whose latency is not kept (warm-up)
     */
    Run run(String mode, double rate, int total, double dropFraction) throws Exception {
        String queue = env.queue("latency." + mode);
        Recorder rec = new Recorder(total);
        String load = BenchEnv.loadAverage();
        try (Sink sink = switch (mode) {
            case RAW -> new RawSink(queue, rec, 0);
            case RAW_POOL4 -> new RawSink(queue, rec, 4);
            default -> new RuntimeSink(queue, rec);
        }) {
            Publishers pub = new Publishers(queue, total);
            try {
                System.gc();
                Thread.sleep(200);
                double reached = pub.publish(rate);
                long end = System.nanoTime();
                long backlog = total - rec.received.get();
                boolean all = rec.awaitAll(30, TimeUnit.SECONDS);
                long drain = all ? rec.lastArrival - end : -1;
                int from = (int) (total * dropFraction);
                return new Run(mode, rate, reached, rec.sorted(rec.fromScheduled, from), rec.sorted(rec.fromSent, from),
                        rec.received.get(), total, backlog, Math.max(0, drain), load.split(" ")[0]);
            } finally {
                pub.close();
            }
        }
    }

    // ------------------------------------------------------------------ sustainable rate

    /**
     * Finds the highest rate the publishers and a consumer of {@code mode} sustain together.
     *
     * @param start first rate to probe
     * @param cap never probe above this rate
     * @param probeSeconds length of one probe
     * @return the highest passing rate (0 if none passed down to 1,000 msg/s)
     */
    double sustainable(String mode, double start, double cap, double probeSeconds) throws Exception {
        double lo = 0;
        double hi = Double.NaN;
        double rate = Math.min(start, cap);
        // ramp up (or down) geometrically until the outcome flips
        while (true) {
            boolean ok = probe(mode, rate, probeSeconds);
            if (ok) {
                lo = rate;
                if (rate >= cap || !Double.isNaN(hi)) {
                    break;
                }
                rate = Math.min(cap, rate * 1.3);
            } else {
                hi = rate;
                if (lo > 0) {
                    break;
                }
                rate = rate / 1.3;
                if (rate < 1_000) {
                    return 0;
                }
            }
        }
        // bisect between the last pass and the first fail (geometric midpoint), three steps: within ~4 %
        for (int i = 0; i < 3 && !Double.isNaN(hi) && hi / lo > 1.03; i++) {
            double mid = Math.sqrt(lo * hi);
            if (probe(mode, mid, probeSeconds)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** Runs both paths once at {@code rate} and throws the result away (JIT, connection set-up, first GCs). */
    void warmUp(double rate, double seconds) throws Exception {
        for (String mode : new String[] {RAW, RUNTIME}) {
            Run r = run(mode, rate, (int) Math.max(1_000, rate * seconds), 0.1);
            System.out.println(String.format(Locale.ROOT, "# warm-up  %-8s %,7.0f msg/s: reached %,7.0f, p50 %,7.0f µs",
                    mode, rate, r.reached(), pct(r.fromScheduled(), 50) / 1e3));
        }
    }

    private boolean probe(String mode, double rate, double seconds) throws Exception {
        int total = (int) Math.max(1_000, rate * seconds);
        Run r = run(mode, rate, total, 0.25);
        long allowed = (long) Math.max(200, rate * 0.020);
        double p50 = pct(r.fromScheduled(), 50);
        boolean ok = r.reached() >= 0.97 * rate && r.backlogAtEnd() <= allowed && r.complete()
                && p50 <= PROBE_MAX_P50_NANOS;
        String line = String.format(Locale.ROOT,
                "probe %-8s %,7.0f msg/s: reached %,7.0f, backlog at end %,6d (≤ %,d), p50 %,7.0f µs, p99 %,8.0f µs → %s",
                mode, rate, r.reached(), r.backlogAtEnd(), allowed, pct(r.fromScheduled(), 50) / 1e3,
                pct(r.fromScheduled(), 99) / 1e3, ok ? "keeps up" : "falls behind");
        System.out.println("# " + line);
        System.out.flush();
        probeLog.append(String.format(Locale.ROOT, "| %s | %,.0f | %,.0f | %,d | %,.0f | %,.0f | %s |%n", mode, rate,
                r.reached(), r.backlogAtEnd(), pct(r.fromScheduled(), 50) / 1e3, pct(r.fromScheduled(), 99) / 1e3,
                ok ? "keeps up" : "falls behind"));
        return ok;
    }

    String probeTable() {
        return "| probe consumer | requested msg/s | reached msg/s | backlog when publishing ended | p50 µs | p99 µs | "
                + "verdict |\n|---|---:|---:|---:|---:|---:|---|\n" + probeLog;
    }

    // ------------------------------------------------------------------ recording

    /** Latency per sequence number, filled by whichever thread consumes the message. */
    static final class Recorder {
        final long[] fromScheduled;
        final long[] fromSent;
        final AtomicInteger received = new AtomicInteger();
        final int total;
        volatile long lastArrival;
        private final Object doneLock = new Object();

        Recorder(int total) {
            this.total = total;
            fromScheduled = new long[total];
            fromSent = new long[total];
            Arrays.fill(fromScheduled, -1);
            Arrays.fill(fromSent, -1);
        }

        void record(byte[] body) {
            long now = System.nanoTime();
            ByteBuffer b = ByteBuffer.wrap(body);
            int seq = b.getInt(STAMP_SEQ);
            fromScheduled[seq] = now - b.getLong(STAMP_SCHEDULED);
            fromSent[seq] = now - b.getLong(STAMP_SENT);
            if (received.incrementAndGet() == total) {
                lastArrival = now;
                synchronized (doneLock) {
                    doneLock.notifyAll();
                }
            }
        }

        boolean awaitAll(long timeout, TimeUnit unit) throws InterruptedException {
            long deadline = System.nanoTime() + unit.toNanos(timeout);
            synchronized (doneLock) {
                while (received.get() < total) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(doneLock, left);
                }
            }
            return true;
        }

        /** @return the recorded latencies from sequence {@code from} on, sorted; a lost message counts as +∞ */
        long[] sorted(long[] values, int from) {
            long[] kept = Arrays.copyOfRange(values, from, values.length);
            for (int i = 0; i < kept.length; i++) {
                if (kept[i] < 0) {
                    kept[i] = Long.MAX_VALUE;
                }
            }
            Arrays.sort(kept);
            return kept;
        }
    }

    // ------------------------------------------------------------------ consumers

    private interface Sink extends AutoCloseable {
        @Override
        void close() throws Exception;
    }

    /**
     * protonj2 receiver, credit window 1000, manual accept. Without a pool: receive, decode, record, accept on one
     * thread. With a pool: the receiving thread hands each delivery to the pool, which decodes, records and accepts
     * (≤ 1000 in flight), the shape of the runtime's dispatcher → worker hand-off without the runtime.
     */
    private final class RawSink implements Sink {
        private final Connection connection;
        private final Receiver receiver;
        private final Thread thread;
        private final ExecutorService pool;
        private volatile boolean stop;

        RawSink(String queue, Recorder rec, int poolThreads) throws Exception {
            connection = env.client().connect(HOST, env.port());
            receiver = connection.openReceiver(queue, new ReceiverOptions().creditWindow(1000).autoAccept(false));
            receiver.openFuture().get(30, TimeUnit.SECONDS);
            pool = poolThreads > 0 ? Executors.newFixedThreadPool(poolThreads) : null;
            Semaphore inFlight = new Semaphore(1000);
            thread = new Thread(() -> {
                try {
                    while (!stop) {
                        Delivery d = receiver.receive(50, TimeUnit.MILLISECONDS);
                        if (d == null) {
                            continue;
                        }
                        if (pool == null) {
                            rec.record((byte[]) d.message().body());
                            d.accept();
                            continue;
                        }
                        inFlight.acquire();
                        pool.execute(() -> {
                            try {
                                rec.record((byte[]) d.message().body());
                                d.accept();
                            } catch (ClientException e) {
                                e.printStackTrace();
                            } finally {
                                inFlight.release();
                            }
                        });
                    }
                } catch (ClientException e) {
                    if (!stop) {
                        e.printStackTrace();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "raw-latency");
            thread.start();
        }

        @Override
        public void close() throws Exception {
            stop = true;
            thread.join(10_000);
            if (pool != null) {
                pool.shutdown();
                pool.awaitTermination(10, TimeUnit.SECONDS);
            }
            receiver.close();
            connection.close();
        }
    }

    /** AmqpConsumer, in-memory store (pre-loaded, unbounded), 4 handler threads, prefetch 996; the handler records. */
    private final class RuntimeSink implements Sink {
        private final AmqpConsumer consumer;

        RuntimeSink(String queue, Recorder rec) throws Exception {
            InMemoryIdempotencyStore store = env.memoryStore();
            consumer = AmqpConsumer.builder().name("latency").broker(HOST, env.port()).store(store)
                    .subscribe(Subscription.builder(queue, e -> rec.record(e.body(byte[].class)))
                            .concurrency(4).prefetch(996).build())
                    .start();
            Thread.sleep(500); // attached (there is no attach callback in the API)
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(30));
        }
    }

    // ------------------------------------------------------------------ load generator

    /** The publisher connections of one run, their messages built before the clock starts. */
    private final class Publishers implements AutoCloseable {
        private final List<Connection> connections = new ArrayList<>();
        private final List<Sender> senders = new ArrayList<>();
        private final Message<byte[]>[][] messages;
        private final byte[][][] bodies;
        private final int total;

        @SuppressWarnings("unchecked")
        Publishers(String queue, int total) throws Exception {
            this.total = total;
            messages = new Message[publishers][];
            bodies = new byte[publishers][][];
            try {
                for (int p = 0; p < publishers; p++) {
                    Connection c = env.client().connect(HOST, env.port());
                    connections.add(c);
                    Sender s = c.openSender(queue, new SenderOptions().deliveryMode(DeliveryMode.AT_MOST_ONCE));
                    s.openFuture().get(30, TimeUnit.SECONDS);
                    senders.add(s);
                    int n = (total - p + publishers - 1) / publishers;
                    messages[p] = new Message[n];
                    bodies[p] = new byte[n][];
                    for (int k = 0; k < n; k++) {
                        int seq = p + k * publishers;
                        byte[] body = new byte[EndToEndBenchmark.BODY];
                        ByteBuffer.wrap(body).putInt(STAMP_SEQ, seq);
                        bodies[p][k] = body;
                        messages[p][k] = Message.create(body).messageId(queue + ":" + seq).durable(false);
                    }
                }
            } catch (Exception e) {
                close();
                throw e;
            }
        }

        /** @return the rate reached: messages / (last send returned − start) */
        double publish(double rate) throws Exception {
            double interval = 1e9 / rate;
            long start = System.nanoTime() + 20_000_000L;
            long[] finished = new long[publishers];
            AtomicReference<Exception> failure = new AtomicReference<>();
            Thread[] threads = new Thread[publishers];
            for (int p = 0; p < publishers; p++) {
                int id = p;
                threads[p] = new Thread(() -> {
                    try {
                        send(id, start, interval);
                    } catch (Exception e) {
                        failure.compareAndSet(null, e);
                    }
                    finished[id] = System.nanoTime();
                }, "publisher-" + p);
                threads[p].start();
            }
            for (Thread t : threads) {
                t.join();
            }
            if (failure.get() != null) {
                throw failure.get();
            }
            long end = Arrays.stream(finished).max().orElse(start);
            // the last message is due at start + (total - 1) × interval; one interval more is the nominal duration
            return total * 1e9 / Math.max(1, end - start);
        }

        private void send(int p, long start, double interval) throws ClientException {
            Sender sender = senders.get(p);
            Message<byte[]>[] mine = messages[p];
            byte[][] body = bodies[p];
            for (int k = 0; k < mine.length; k++) {
                long due = start + (long) ((p + (double) k * publishers) * interval);
                long wait;
                while ((wait = due - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                }
                ByteBuffer b = ByteBuffer.wrap(body[k]);
                b.putLong(STAMP_SCHEDULED, due);
                b.putLong(STAMP_SENT, System.nanoTime());
                sender.send(mine[k]);
            }
        }

        @Override
        public void close() {
            for (Connection c : connections) {
                try {
                    c.close();
                } catch (RuntimeException ignored) {
                    // closing anyway
                }
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    static double pct(long[] sorted, double p) {
        return EndToEndBenchmark.pct(sorted, p);
    }
}

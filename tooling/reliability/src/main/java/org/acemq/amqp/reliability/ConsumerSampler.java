package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * A consumer process's own figures, one line every period appended to a file the soak driver reads
 * ({@link SoakSample#parse}). Each line: {@code t=<epoch ms> id=<incarnation> heap=<bytes used right after a full
 * GC> threads=<live threads> fds=<open file descriptors, /proc/self/fd> pool=<connections open in all Hikari pools>
 * poolActive=<in use> poolMax=<sum of the pools' maximum sizes> delivered=<acemq.consumer.deliveries, all outcomes>
 * accepted=<… ACCEPTED> claims=<acemq.consumer.claims> storeErrors=<acemq.store.errors>
 * interruptions=<acemq.consumer.connection.interruptions> inflight=<acemq.consumer.inflight>
 * credit=<acemq.consumer.credit> dropped=<acemq.consumer.dispositions.dropped> direct=<bytes of direct buffers
 * (the JVM's "direct" buffer pool: Netty's pooled arenas, where protonj2 keeps frames and payloads)>}.
 *
 * <p>The heap figure is taken after {@link System#gc()} (the consumer JVMs run the serial collector, where that is a
 * full, stop-the-world collection): what is left is what the process holds on to, the figure that shows a leak.
 */
final class ConsumerSampler implements AutoCloseable {

    private final ScheduledExecutorService timer;

    private ConsumerSampler(ScheduledExecutorService timer) {
        this.timer = timer;
    }

    static ConsumerSampler start(Path file, Duration period, String id, MeterRegistry registry,
            List<HikariDataSource> pools) {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "harness-sampler");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(() -> {
            try {
                String line = sample(id, registry, pools) + "\n";
                Files.writeString(file, line, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            } catch (IOException | RuntimeException e) {
                System.err.println("HARNESS sample failed: " + e);
            }
        }, 0, period.toMillis(), TimeUnit.MILLISECONDS);
        return new ConsumerSampler(timer);
    }

    static String sample(String id, MeterRegistry registry, List<HikariDataSource> pools) {
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        int threads = ManagementFactory.getThreadMXBean().getThreadCount();
        long fds;
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            fds = s.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int open = 0;
        int active = 0;
        int max = 0;
        for (HikariDataSource ds : pools) {
            HikariPoolMXBean bean = ds.getHikariPoolMXBean();
            if (bean != null) {
                open += bean.getTotalConnections();
                active += bean.getActiveConnections();
            }
            max += ds.getMaximumPoolSize();
        }
        return String.format(Locale.ROOT,
                "t=%d id=%s heap=%d threads=%d fds=%d pool=%d poolActive=%d poolMax=%d delivered=%d accepted=%d"
                        + " claims=%d storeErrors=%d interruptions=%d inflight=%d credit=%d dropped=%d direct=%d",
                System.currentTimeMillis(), id, heap, threads, fds, open, active, max,
                count(registry, "acemq.consumer.deliveries", null), count(registry, "acemq.consumer.deliveries",
                        "ACCEPTED"),
                count(registry, "acemq.consumer.claims", null), count(registry, "acemq.store.errors", null),
                count(registry, "acemq.consumer.connection.interruptions", null),
                gauge(registry, "acemq.consumer.inflight"), gauge(registry, "acemq.consumer.credit"),
                count(registry, "acemq.consumer.dispositions.dropped", null), directBytes());
    }

    /** @return bytes held by the JVM's direct buffer pool */
    private static long directBytes() {
        long used = 0;
        for (java.lang.management.BufferPoolMXBean pool
                : ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                used += pool.getMemoryUsed();
            }
        }
        return used;
    }

    private static long count(MeterRegistry registry, String name, String tagValue) {
        double sum = 0;
        for (Counter c : registry.find(name).counters()) {
            if (tagValue == null || c.getId().getTags().stream().anyMatch(t -> t.getValue().equalsIgnoreCase(tagValue))) {
                sum += c.count();
            }
        }
        return Math.round(sum);
    }

    private static long gauge(MeterRegistry registry, String name) {
        double sum = 0;
        for (io.micrometer.core.instrument.Gauge g : registry.find(name).gauges()) {
            double v = g.value();
            if (!Double.isNaN(v)) {
                sum += v;
            }
        }
        return Math.round(sum);
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}

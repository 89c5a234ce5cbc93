package org.acemq.amqp.benchmarks.store;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;

/**
 * Measures the heap an {@link InMemoryIdempotencyStore} holds per remembered identifier: fills an unbounded store
 * with N confirmed 36-character UUID ids (default 1,000,000) and compares the used heap after full collections.
 *
 * <p>The ids are made, and measured, before the store is filled, so the store's own cost (map node, table slot, entry)
 * and the cost of the id strings are reported apart; "with key" is what a remembered id costs when nothing else holds
 * its string, which is the normal case (the delivery that carried it is long gone).
 *
 * <pre>
 * mvn -B -o -q -pl tooling/benchmarks -am package -DskipTests
 * mvn -B -o -q -pl tooling/benchmarks dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
 * java -Xmx2g -XX:+UseParallelGC -cp tooling/benchmarks/target/classes:$(cat tooling/benchmarks/target/classpath.txt) \
 *   org.acemq.amqp.benchmarks.store.InMemoryHeapPerId [count]
 * </pre>
 * Use a collector whose {@code System.gc()} is a full, compacting collection (Parallel or G1, not Epsilon) and the
 * default compressed oops (heaps below 32 GB).
 */
public final class InMemoryHeapPerId {

    private InMemoryHeapPerId() {
    }

    /**
     * @param args optionally the number of ids
     */
    public static void main(String[] args) {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;

        long baseline = usedHeapAfterGc();
        String[] ids = new String[count];
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < count; i++) {
            ids[i] = new UUID(random.nextLong(), random.nextLong()).toString();
        }
        long withIds = usedHeapAfterGc();
        long arrayBytes = 16L + 4L * count; // the String[] itself, with compressed oops

        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder()
                .maxEntries(InMemoryIdempotencyStore.UNBOUNDED).build();
        for (String id : ids) {
            store.tryClaim(id);
            store.confirm(id);
        }
        long filled = usedHeapAfterGc();

        double idBytes = (double) (withIds - baseline - arrayBytes) / count;
        double storeBytes = (double) (filled - withIds) / count;
        System.out.printf("ids: %,d confirmed 36-char UUID strings; JVM %s, %s%n", count,
                System.getProperty("java.vm.version"), ManagementFactory.getRuntimeMXBean().getInputArguments());
        System.out.printf("id string:            %6.1f bytes/id%n", idBytes);
        System.out.printf("store without key:    %6.1f bytes/id%n", storeBytes);
        System.out.printf("store with key:       %6.1f bytes/id%n", storeBytes + idBytes);
        // keep everything reachable until after the last measurement
        if (!store.isConfirmed(ids[count - 1])) {
            throw new AssertionError("the last id is not confirmed");
        }
    }

    private static long usedHeapAfterGc() {
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}

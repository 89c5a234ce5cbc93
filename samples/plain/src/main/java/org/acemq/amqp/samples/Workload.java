package org.acemq.amqp.samples;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * The orders to publish and the faults injected into them, decided up front from a seed so that the expected
 * numbers are exact.
 *
 * <p>Order {@code i} has the message-id {@code order-<run>-<i>}. The run id keeps ids unique across runs, so a
 * PostgreSQL store that remembers an earlier run never mistakes a new order for a duplicate. Poison orders are
 * never duplicated nor marked transient, so every count has one cause.
 *
 * <p>Publish order: every order once, in sequence; the extra copy of a duplicated order is published 300 to 2,000
 * messages later (less for tiny workloads), as a publisher that retries after a timed-out send would do.
 */
final class Workload {

    /** Application property telling the demo handler which fault to simulate. */
    static final String FAULT_PROPERTY = "demo-fault";
    static final String FAULT_TRANSIENT = "transient";
    static final String FAULT_POISON = "poison";

    private static final int MIN_COPY_GAP = 300;
    private static final int MAX_EXTRA_COPY_GAP = 1_700;

    private final String runId;
    private final int orders;
    private final BitSet duplicated;
    private final BitSet transientFailing;
    private final BitSet poison;
    private final int[] publishOrder;

    private Workload(String runId, int orders, BitSet duplicated, BitSet transientFailing, BitSet poison,
                     int[] publishOrder) {
        this.runId = runId;
        this.orders = orders;
        this.duplicated = duplicated;
        this.transientFailing = transientFailing;
        this.poison = poison;
        this.publishOrder = publishOrder;
    }

    static Workload create(String runId, int orders, double duplicateShare, double transientShare, int poisonCount,
                           long seed) {
        Random random = new Random(seed);
        List<Integer> all = new ArrayList<>(orders);
        for (int i = 0; i < orders; i++) {
            all.add(i);
        }
        Collections.shuffle(all, random);
        BitSet poison = new BitSet(orders);
        for (int i = 0; i < poisonCount; i++) {
            poison.set(all.get(i));
        }
        List<Integer> healthy = new ArrayList<>(all.subList(poisonCount, orders));
        int healthyCount = healthy.size();
        int duplicateCount = (int) Math.round(duplicateShare * orders);
        int transientCount = (int) Math.round(transientShare * orders);
        duplicateCount = Math.min(duplicateCount, healthyCount);
        transientCount = Math.min(transientCount, healthyCount);

        // A copy follows its original by at least minGap messages, more than a consumer holds at once (concurrency
        // + prefetch), as a retrying publisher's copy would arrive later. Copies of the last orders are published
        // at the end; prefer originals that leave room for the gap.
        int minGap = Math.min(MIN_COPY_GAP, orders / 4);
        Collections.shuffle(healthy, random);
        healthy.sort((a, b) -> Boolean.compare(a >= orders - minGap, b >= orders - minGap)); // stable
        BitSet duplicated = new BitSet(orders);
        for (int i = 0; i < duplicateCount; i++) {
            duplicated.set(healthy.get(i));
        }
        Collections.shuffle(healthy, random);
        BitSet transientFailing = new BitSet(orders);
        for (int i = 0; i < transientCount; i++) {
            transientFailing.set(healthy.get(i));
        }

        // every order in sequence; a duplicate's copy follows 300..2,000 positions later
        Map<Integer, List<Integer>> copiesDue = new HashMap<>();
        int[] publish = new int[orders + duplicateCount];
        int n = 0;
        for (int i = 0; i < orders; i++) {
            publish[n++] = i;
            if (duplicated.get(i)) {
                copiesDue.computeIfAbsent(i + minGap + random.nextInt(MAX_EXTRA_COPY_GAP), k -> new ArrayList<>())
                        .add(i);
            }
            List<Integer> due = copiesDue.remove(i);
            if (due != null) {
                for (int copy : due) {
                    publish[n++] = copy;
                }
            }
        }
        List<Integer> late = new ArrayList<>();
        copiesDue.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> late.addAll(e.getValue()));
        for (int copy : late) {
            publish[n++] = copy;
        }
        if (n != publish.length) {
            throw new IllegalStateException("publish plan has " + n + " entries, expected " + publish.length);
        }
        return new Workload(runId, orders, duplicated, transientFailing, poison, publish);
    }

    String runId() {
        return runId;
    }

    int orders() {
        return orders;
    }

    int duplicates() {
        return duplicated.cardinality();
    }

    int transientFailures() {
        return transientFailing.cardinality();
    }

    int poisonCount() {
        return poison.cardinality();
    }

    int healthyOrders() {
        return orders - poisonCount();
    }

    /** @return messages to publish: every order once plus one copy per duplicate */
    int published() {
        return publishOrder.length;
    }

    /** @return order index of the n-th message to publish */
    int orderAt(int n) {
        return publishOrder[n];
    }

    boolean isPoison(int order) {
        return poison.get(order);
    }

    boolean isTransient(int order) {
        return transientFailing.get(order);
    }

    /** @return the fault to simulate for this order, or null */
    String faultOf(int order) {
        return poison.get(order) ? FAULT_POISON : transientFailing.get(order) ? FAULT_TRANSIENT : null;
    }

    String messageId(int order) {
        return String.format(Locale.ROOT, "order-%s-%07d", runId, order);
    }

    /** @return the order index of one of this run's message-ids, or -1 for any other id */
    int orderOf(Object messageId) {
        if (!(messageId instanceof String s)) {
            return -1;
        }
        String prefix = "order-" + runId + "-";
        if (!s.startsWith(prefix)) {
            return -1;
        }
        try {
            int i = Integer.parseInt(s.substring(prefix.length()));
            return i >= 0 && i < orders ? i : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    String body(int order) {
        long cents = 1_000 + Math.floorMod(order * 7_919L, 99_000L);
        return String.format(Locale.ROOT, "{\"orderId\":\"%s\",\"customer\":\"c-%04d\",\"amount\":%d.%02d}",
                messageId(order), order % 1_000, cents / 100, cents % 100);
    }
}

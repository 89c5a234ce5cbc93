package org.acemq.amqp.samples;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WorkloadTest {

    @Test
    void theDefaultWorkloadHasExactlyThePlannedFaults() {
        Workload w = Workload.create("r1", 20_000, 0.05, 0.02, 5, 42);
        assertThat(w.duplicates()).isEqualTo(1_000);
        assertThat(w.transientFailures()).isEqualTo(400);
        assertThat(w.poisonCount()).isEqualTo(5);
        assertThat(w.healthyOrders()).isEqualTo(19_995);
        assertThat(w.published()).isEqualTo(21_000);
    }

    @Test
    void everyOrderIsPublishedOnceAndEachDuplicateOnceMoreWellAfterItsOriginal() {
        Workload w = Workload.create("r2", 5_000, 0.1, 0.05, 7, 3);
        Map<Integer, Integer> firstAt = new HashMap<>();
        Map<Integer, Integer> copies = new HashMap<>();
        for (int n = 0; n < w.published(); n++) {
            int order = w.orderAt(n);
            Integer first = firstAt.putIfAbsent(order, n);
            if (first != null) {
                copies.merge(order, 1, Integer::sum);
                assertThat(n - first).as("gap between order %d and its copy", order).isGreaterThanOrEqualTo(300);
            }
        }
        assertThat(firstAt).hasSize(5_000);
        assertThat(copies).hasSize(w.duplicates()).allSatisfy((order, n) -> assertThat(n).isEqualTo(1));
        for (int order : copies.keySet()) {
            assertThat(w.isPoison(order)).isFalse();
        }
    }

    @Test
    void poisonIsNeverAlsoTransientAndIdsRoundTrip() {
        Workload w = Workload.create("abc123", 1_000, 0.5, 0.5, 10, 9);
        for (int i = 0; i < 1_000; i++) {
            if (w.isPoison(i)) {
                assertThat(w.isTransient(i)).isFalse();
                assertThat(w.faultOf(i)).isEqualTo(Workload.FAULT_POISON);
            }
            assertThat(w.orderOf(w.messageId(i))).isEqualTo(i);
        }
        assertThat(w.orderOf("order-other-0000001")).isEqualTo(-1);
        assertThat(w.orderOf(42L)).isEqualTo(-1);
        assertThat(w.orderOf("order-abc123-0001000")).isEqualTo(-1);
    }

    @Test
    void theSameSeedGivesTheSamePlan() {
        Workload a = Workload.create("x", 2_000, 0.05, 0.02, 5, 11);
        Workload b = Workload.create("x", 2_000, 0.05, 0.02, 5, 11);
        for (int n = 0; n < a.published(); n++) {
            assertThat(a.orderAt(n)).isEqualTo(b.orderAt(n));
        }
    }
}

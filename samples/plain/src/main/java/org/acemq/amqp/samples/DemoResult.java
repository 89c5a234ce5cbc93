package org.acemq.amqp.samples;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.acemq.amqp.consumer.SettleReason;

/**
 * The outcome of one demo run: the numbers in the summary table and the verdict.
 *
 * @param published messages the broker accepted from the publisher (orders plus duplicate copies)
 * @param exactlyOnce healthy orders whose effect was applied exactly once
 * @param duplicatesAbsorbed deliveries the runtime accepted as duplicates without running the handler
 * @param retried deliveries returned to the broker after a handler failure, to be tried again
 * @param expectedRetried transient failures plus poison orders times (max attempts - 1)
 * @param deadLettered this run's messages found in the dead-letter queue
 * @param lost healthy orders never applied
 * @param processedTwice orders applied more than once
 * @param poisonNotDeadLettered poison orders missing from the dead-letter queue
 * @param healthyDeadLettered healthy orders found in the dead-letter queue
 * @param poisonApplied poison orders whose effect was applied (impossible unless the handler is broken)
 * @param settled deliveries settled for good (accepted or rejected)
 * @param consumeNanos time from starting the consumer to the last final settlement
 * @param throughput settled deliveries per second
 * @param timeout why the run timed out, or null
 * @param notes remarks that do not fail the run
 */
public record DemoResult(long published, long exactlyOnce, long duplicatesAbsorbed, long retried, long expectedRetried,
                         long deadLettered, long lost, long processedTwice, long poisonNotDeadLettered,
                         long healthyDeadLettered, long poisonApplied, long settled, long consumeNanos,
                         long throughput, String timeout, List<String> notes) {

    /** Copies the notes. */
    public DemoResult {
        notes = List.copyOf(notes);
    }

    static DemoResult compute(DemoOptions options, Workload w, int published, OrdersDemo.Effects effects,
                              DemoObserver observer, BitSet inDlq, int ourDlqMessages, long consumeNanos,
                              String timeout) {
        long exactlyOnce = 0;
        long lost = 0;
        long twice = 0;
        long poisonMissing = 0;
        long healthyInDlq = 0;
        long poisonApplied = 0;
        for (int i = 0; i < w.orders(); i++) {
            int n = effects.count(i);
            if (n > 1) {
                twice++;
            }
            if (w.isPoison(i)) {
                if (n > 0) {
                    poisonApplied++;
                }
                if (!inDlq.get(i)) {
                    poisonMissing++;
                }
            } else {
                if (n == 0) {
                    lost++;
                } else if (n == 1) {
                    exactlyOnce++;
                }
                if (inDlq.get(i)) {
                    healthyInDlq++;
                }
            }
        }
        long settled = observer.finallySettled();
        long throughput = Math.round(settled / (consumeNanos / 1e9));
        long expectedRetried = w.transientFailures() + (long) w.poisonCount() * Math.max(0, options.maxAttempts() - 1);
        List<String> notes = new ArrayList<>();
        if (observer.interruptions() > 0 || observer.abandoned() > 0) {
            notes.add(observer.interruptions() + " connection loss(es), " + observer.abandoned()
                    + " deliveries abandoned and redelivered; duplicates/retries may differ from the plan");
        }
        if (observer.settled(SettleReason.IN_PROGRESS) > 0) {
            notes.add(observer.settled(SettleReason.IN_PROGRESS) + " cop(y/ies) arrived while the original was "
                    + "being handled: held for the in-progress delay, released, absorbed later");
        }
        if (effects.foreign() > 0) {
            notes.add(effects.foreign() + " messages from other runs were in the queue; accepted and ignored");
        }
        return new DemoResult(published, exactlyOnce, observer.settled(SettleReason.DUPLICATE),
                observer.settled(SettleReason.FAILED), expectedRetried, ourDlqMessages, lost, twice, poisonMissing,
                healthyInDlq, poisonApplied, settled, consumeNanos, throughput, timeout, notes);
    }

    /** @return whether nothing was lost or duplicated, all poison is in the DLQ and the run completed */
    public boolean pass() {
        return timeout == null && lost == 0 && processedTwice == 0 && poisonNotDeadLettered == 0
                && healthyDeadLettered == 0 && poisonApplied == 0;
    }

    /** @return the verdict line, without the "VERDICT: " prefix */
    public String verdict() {
        if (pass()) {
            return "PASS - every order processed exactly once, poison dead-lettered";
        }
        List<String> why = new ArrayList<>();
        if (timeout != null) {
            why.add(timeout);
        }
        if (lost > 0) {
            why.add(OrdersDemo.num(lost) + " order(s) lost");
        }
        if (processedTwice > 0) {
            why.add(OrdersDemo.num(processedTwice) + " order(s) processed more than once");
        }
        if (poisonNotDeadLettered > 0) {
            why.add(OrdersDemo.num(poisonNotDeadLettered) + " poison order(s) not in the dead-letter queue");
        }
        if (healthyDeadLettered > 0) {
            why.add(OrdersDemo.num(healthyDeadLettered) + " healthy order(s) dead-lettered");
        }
        if (poisonApplied > 0) {
            why.add(OrdersDemo.num(poisonApplied) + " poison order(s) applied");
        }
        return "FAIL - " + String.join("; ", why);
    }
}

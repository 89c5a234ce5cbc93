package org.acemq.amqp.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import org.acemq.amqp.samples.twoservices.CommandPlan;
import org.acemq.amqp.samples.twoservices.Ledger;

/**
 * What the chain test found ({@link ChainHarness}): both services' tables as {@link Ledger} reads them, what the
 * services absorbed and repaired, and the faults that happened.
 *
 * @param config the run's settings
 * @param plan what the publisher was to send
 * @param published sends, counting every message of a part sent again after a failure
 * @param publishRetries parts sent again
 * @param ledger both services' tables
 * @param copiesAbsorbedByOrders commands the order service accepted as copies (duplicates, retries under new ids,
 *     redeliveries after a crash)
 * @param copiesAbsorbedByShipping events the shipping service accepted as copies (an event dispatched again)
 * @param repairsByCopy copies of a command that dispatched the event its committed order had left in the outbox
 * @param dispatchFailures events the order service could not dispatch and left in the outbox
 * @param killsOfOrders timed SIGKILLs of an order service process
 * @param killsOfShipping timed SIGKILLs of a shipping service process
 * @param crashesOfOrders after-commit crash points that fired in the order service (self SIGKILL)
 * @param crashesOfShipping after-commit crash points that fired in the shipping service
 * @param brokerRestarts broker restarts
 * @param deadIncarnations consumer processes that died while the test ran
 * @param rejections deliveries a consumer settled as rejected (none expected: the chain has no poison)
 * @param queuedAfterStop commands and events left in their queues after the consumers stopped
 * @param deadLettered messages in the dead-letter queues
 * @param completed whether every order was shipped before the timeout
 * @param duration the whole run
 */
public record ChainResult(ChainHarness.Config config, CommandPlan plan, int published, int publishRetries,
                          Ledger ledger, long copiesAbsorbedByOrders, long copiesAbsorbedByShipping,
                          long repairsByCopy, long dispatchFailures, int killsOfOrders, int killsOfShipping,
                          int crashesOfOrders, int crashesOfShipping, int brokerRestarts,
                          Set<String> deadIncarnations, long rejections, long queuedAfterStop, long deadLettered,
                          boolean completed, Duration duration) {

    /** @return every check that failed, empty when the run passed */
    public List<String> violations() {
        List<String> v = new ArrayList<>();
        if (!completed) {
            v.add("not every order was shipped before the timeout");
        }
        if (ledger.lost() > 0) {
            v.add(ledger.lost() + " orders lost");
        }
        if (ledger.rowsInOrders() != plan.orders() || ledger.twiceInOrders() > 0) {
            v.add("order rows " + ledger.rowsInOrders() + " for " + plan.orders() + " orders, "
                    + ledger.twiceInOrders() + " orders with more than one");
        }
        if (ledger.eventsSent() != plan.orders()) {
            v.add("outbox rows " + ledger.eventsSent() + " for " + plan.orders() + " orders");
        }
        if (ledger.eventsPending() > 0) {
            v.add(ledger.eventsPending() + " events never dispatched");
        }
        if (ledger.rowsInShipments() != plan.orders() || ledger.twiceInShipments() > 0) {
            v.add("shipment rows " + ledger.rowsInShipments() + " for " + plan.orders() + " orders, "
                    + ledger.twiceInShipments() + " orders with more than one");
        }
        if (ledger.wrongEvent() > 0) {
            v.add(ledger.wrongEvent() + " shipments of another event than their order's");
        }
        if (rejections > 0) {
            v.add(rejections + " deliveries rejected");
        }
        if (deadLettered > 0) {
            v.add(deadLettered + " messages dead-lettered");
        }
        if (queuedAfterStop > 0) {
            v.add(queuedAfterStop + " messages left in the queues");
        }
        if (killsOfOrders + killsOfShipping < config.kills()) {
            v.add("only " + (killsOfOrders + killsOfShipping) + " of " + config.kills() + " kills injected");
        }
        if (brokerRestarts < 1) {
            v.add("the broker was not restarted");
        }
        if (config.crashesPerService() > 0 && (crashesOfOrders == 0 || crashesOfShipping == 0)) {
            v.add("after-commit crash points fired: orders " + crashesOfOrders + ", shipping " + crashesOfShipping);
        }
        return v;
    }

    /** @return the result as a table, for the log and the docs */
    public String table() {
        StringBuilder sb = new StringBuilder();
        row(sb, "orders", plan.orders());
        row(sb, "commands published (incl. copies)", published);
        row(sb, "  duplicates / retries under new ids planned", plan.duplicates() + " / " + plan.newIdRetries());
        row(sb, "  publisher parts sent again", publishRetries);
        row(sb, "order rows (service A)", ledger.rowsInOrders());
        row(sb, "  orders with more than one", ledger.twiceInOrders());
        row(sb, "OrderAccepted in A's outbox", ledger.eventsSent());
        row(sb, "  not dispatched at the end", ledger.eventsPending());
        row(sb, "shipment rows (service B)", ledger.rowsInShipments());
        row(sb, "  orders with more than one", ledger.twiceInShipments());
        row(sb, "  shipments of another event", ledger.wrongEvent());
        row(sb, "lost", ledger.lost());
        row(sb, "copies absorbed by A (commands)", copiesAbsorbedByOrders);
        row(sb, "copies absorbed by B (events dispatched again)", copiesAbsorbedByShipping);
        row(sb, "events left pending, dispatched by a copy", repairsByCopy);
        row(sb, "dispatches that failed (left in the outbox)", dispatchFailures);
        row(sb, "SIGKILL: timed, A / B", killsOfOrders + " / " + killsOfShipping);
        row(sb, "SIGKILL: after commit, A / B", crashesOfOrders + " / " + crashesOfShipping);
        row(sb, "broker restarts", brokerRestarts);
        row(sb, "consumer processes that died", deadIncarnations.size());
        row(sb, "rejected / dead-lettered / left queued", rejections + " / " + deadLettered + " / " + queuedAfterStop);
        row(sb, "completed", completed);
        row(sb, "duration", String.format(Locale.ROOT, "%.1f s", duration.toMillis() / 1000.0));
        for (String example : ledger.examples()) {
            sb.append("  ").append(example).append('\n');
        }
        List<String> v = violations();
        sb.append(v.isEmpty() ? "PASS" : "FAIL: " + v).append('\n');
        return sb.toString();
    }

    private static void row(StringBuilder sb, String label, Object value) {
        sb.append(String.format(Locale.ROOT, "| %-48s | %s |%n", label, value));
    }
}

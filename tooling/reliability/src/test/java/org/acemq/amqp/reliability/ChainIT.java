package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chain test in CI ({@link ChainHarness}): the two-services sample on Artemis (persistent journal) and PostgreSQL,
 * two consumer JVMs per service, six timed SIGKILLs alternating between the services, an after-commit SIGKILL on two
 * orders in each service, one broker restart, 5 % duplicate commands and 3 % retries under new message-ids. Every
 * order must end with exactly one row in the order service's table, exactly one event in its outbox, dispatched, and
 * exactly one shipment carrying that event's id; nothing lost, rejected or left in a queue. See docs/reliability.md,
 * "The chain test".
 */
class ChainIT {

    private static final int ORDERS = 1_000;

    @TempDir
    Path workDir;

    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void everyOrderHasExactlyOneRowInEachServiceThroughKillsAndABrokerRestart() throws Exception {
        ChainResult result = new ChainHarness(ChainHarness.Config.defaults(ORDERS).withWorkDir(workDir)).run();
        System.out.println(result.table());

        assertThat(result.ledger().lost()).as("lost").isZero();
        assertThat(result.ledger().rowsInOrders()).as("order rows").isEqualTo(ORDERS);
        assertThat(result.ledger().twiceInOrders()).as("orders placed twice").isZero();
        assertThat(result.ledger().eventsSent()).as("events in the outbox").isEqualTo(ORDERS);
        assertThat(result.ledger().eventsPending()).as("events never dispatched").isZero();
        assertThat(result.ledger().rowsInShipments()).as("shipment rows").isEqualTo(ORDERS);
        assertThat(result.ledger().twiceInShipments()).as("orders shipped twice").isZero();
        assertThat(result.ledger().wrongEvent()).as("shipments of another event").isZero();
        assertThat(result.copiesAbsorbedByOrders()).as("the publisher's copies were absorbed")
                .isGreaterThanOrEqualTo(result.plan().duplicates() + result.plan().newIdRetries());
        assertThat(result.killsOfOrders()).as("timed SIGKILLs of the order service").isEqualTo(3);
        assertThat(result.killsOfShipping()).as("timed SIGKILLs of the shipping service").isEqualTo(3);
        assertThat(result.crashesOfOrders()).as("after-commit SIGKILLs in the order service").isPositive();
        assertThat(result.crashesOfShipping()).as("after-commit SIGKILLs in the shipping service").isPositive();
        assertThat(result.brokerRestarts()).as("broker restarts").isEqualTo(1);
        assertThat(result.violations()).isEmpty();
    }
}

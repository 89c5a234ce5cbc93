package org.acemq.amqp.samples.twoservices;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The verdict's source on a real PostgreSQL: each kind of failure the demo and the chain test look for, written into
 * the services' tables by hand, is counted as what it is, and rows of another run are not counted.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LedgerIT {

    private PostgresSchema orderSchema;
    private PostgresSchema shippingSchema;
    private JdbcIdempotencyStore orderStore;
    private DataSource db;

    @BeforeEach
    void tables() throws SQLException {
        orderSchema = PostgresProvider.shared().newSchema("ledger_orders");
        shippingSchema = PostgresProvider.shared().newSchema("ledger_shipping");
        db = orderSchema.dataSource();
        orderStore = OrderService.store(db, orderSchema.name()).build();
        OrderService.createSchema(db, orderStore, orderSchema.name());
        ShippingService.createSchema(db, ShippingService.store(db, shippingSchema.name()).build(),
                shippingSchema.name());
    }

    @AfterEach
    void drop() {
        orderSchema.close();
        shippingSchema.close();
    }

    @Test
    void oneRowPerOrderInEachServiceWithTheSameEventIsExactlyOnce() throws SQLException {
        CommandPlan plan = CommandPlan.create("good", 3, 0, 0, 1);
        for (int n = 0; n < 3; n++) {
            order(plan.orderId(n), "e" + n);
            shipment(plan.orderId(n), "e" + n);
            outbox(plan.orderId(n), true);
        }

        Ledger ledger = read(plan);

        assertThat(ledger.exactlyOnce()).isTrue();
        assertThat(ledger.rowsInOrders()).isEqualTo(3);
        assertThat(ledger.rowsInShipments()).isEqualTo(3);
        assertThat(ledger.eventsSent()).isEqualTo(3);
        assertThat(ledger.eventsPending()).isZero();
        assertThat(ledger.examples()).isEmpty();
    }

    @Test
    void aSecondRowALostOrderAnotherEventAndAPendingEventAreEachCounted() throws SQLException {
        CommandPlan plan = CommandPlan.create("bad", 5, 0, 0, 1);
        order(plan.orderId(0), "e0");
        shipment(plan.orderId(0), "e0");
        outbox(plan.orderId(0), true);
        order(plan.orderId(1), "e1"); // shipped twice
        shipment(plan.orderId(1), "e1");
        shipment(plan.orderId(1), "e1");
        outbox(plan.orderId(1), true);
        order(plan.orderId(2), "e2"); // never shipped: its event is still in the outbox
        outbox(plan.orderId(2), false);
        order(plan.orderId(3), "e3"); // shipped from another event
        shipment(plan.orderId(3), "other");
        outbox(plan.orderId(3), true);
        order(plan.orderId(4), "e4"); // placed twice
        order(plan.orderId(4), "e4");
        shipment(plan.orderId(4), "e4");
        outbox(plan.orderId(4), true);
        order("order-otherrun-0000000", "x"); // another run's rows are not this run's
        order("order-otherrun-0000000", "x");
        outbox("order-otherrun-0000000", false);

        Ledger ledger = read(plan);

        assertThat(ledger.exactlyOnce()).isFalse();
        assertThat(ledger.rowsInOrders()).isEqualTo(6);
        assertThat(ledger.twiceInOrders()).isEqualTo(1);
        assertThat(ledger.rowsInShipments()).isEqualTo(5);
        assertThat(ledger.twiceInShipments()).isEqualTo(1);
        assertThat(ledger.lost()).isEqualTo(1);
        assertThat(ledger.wrongEvent()).isEqualTo(1);
        assertThat(ledger.eventsSent()).isEqualTo(5);
        assertThat(ledger.eventsPending()).isEqualTo(1);
        assertThat(ledger.examples()).contains("lost: " + plan.orderId(2) + " (no shipment)",
                "twice in shipments: " + plan.orderId(1) + " (2 rows)",
                "twice in orders: " + plan.orderId(4) + " (2 rows)");
    }

    private Ledger read(CommandPlan plan) throws SQLException {
        return Ledger.read(db, plan, orderSchema.name(), orderStore.outboxTableName(), shippingSchema.name());
    }

    private void order(String orderId, String eventId) throws SQLException {
        sql("INSERT INTO " + orderSchema.name() + ".orders (order_id, customer, amount_cents, command_id, event_id)"
                + " VALUES ('" + orderId + "', 'c', 1, 'cmd', '" + eventId + "')");
    }

    private void shipment(String orderId, String eventId) throws SQLException {
        sql("INSERT INTO " + shippingSchema.name() + ".shipments (order_id, event_id) VALUES ('" + orderId + "', '"
                + eventId + "')");
    }

    private void outbox(String orderId, boolean dispatched) throws SQLException {
        sql("INSERT INTO " + orderStore.outboxTableName() + " (created_at, dispatched_at, position, incoming_key,"
                + " message_id, address, message) VALUES (now(), " + (dispatched ? "now()" : "NULL") + ", 0,"
                + " 'place-order|p:orderId=s:" + orderId + "', 'acemq-x', 'order-accepted', '\\x00')");
    }

    private void sql(String sql) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}

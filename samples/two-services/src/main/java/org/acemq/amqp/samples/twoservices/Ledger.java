package org.acemq.amqp.samples.twoservices;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * What both services' tables say about one run's orders: the proof the demo and the reliability module's chain test
 * give their verdict from. Read with plain SQL from the order service's {@code orders} table and outbox and the
 * shipping service's {@code shipments} table; nothing comes from the consumers' own counters.
 *
 * @param orders the run's distinct orders
 * @param rowsInOrders rows in {@code orders} for the run's orders
 * @param twiceInOrders orders with more than one row there
 * @param eventsSent rows of the order service's outbox for the run's commands (one per committed order; its key
 *     carries the run id, as the order ids and the commands' message-ids do)
 * @param eventsPending of those, the ones not dispatched yet
 * @param rowsInShipments rows in {@code shipments} for the run's orders
 * @param twiceInShipments orders with more than one row there
 * @param wrongEvent orders whose shipment names another event-id than the order row's event
 * @param lost orders missing a row in either table
 * @param examples up to ten order ids of each kind of problem, for the report
 */
public record Ledger(int orders, long rowsInOrders, int twiceInOrders, long eventsSent, long eventsPending,
                     long rowsInShipments, int twiceInShipments, int wrongEvent, int lost, List<String> examples) {

    /** @return whether every order has exactly one row in each service, with the event its order row sent */
    public boolean exactlyOnce() {
        return lost == 0 && twiceInOrders == 0 && twiceInShipments == 0 && wrongEvent == 0
                && rowsInOrders == orders && rowsInShipments == orders;
    }

    /**
     * @param db a connection to the database both services' schemas are in
     * @param plan the run
     * @param orderSchema the order service's schema
     * @param outboxTable the order service's outbox table ({@code JdbcIdempotencyStore#outboxTableName()})
     * @param shippingSchema the shipping service's schema
     * @return the ledger
     * @throws SQLException if the database cannot be read
     */
    public static Ledger read(DataSource db, CommandPlan plan, String orderSchema, String outboxTable,
            String shippingSchema) throws SQLException {
        String prefix = plan.orderIdPrefix() + "%";
        try (Connection c = db.getConnection()) {
            Map<String, Row> a = perOrder(c, "SELECT order_id, count(*), min(event_id), max(event_id) FROM "
                    + orderSchema + ".orders WHERE order_id LIKE ? GROUP BY order_id", prefix);
            Map<String, Row> b = perOrder(c, "SELECT order_id, count(*), min(event_id), max(event_id) FROM "
                    + shippingSchema + ".shipments WHERE order_id LIKE ? GROUP BY order_id", prefix);
            long sent;
            long pending;
            // the run's commands by their key, whatever the subscription keys by: the order id and the command's
            // message-id both carry "-<run id>-"
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*), count(*) FILTER (WHERE dispatched_at IS"
                    + " NULL) FROM " + outboxTable + " WHERE incoming_key LIKE ?")) {
                ps.setString(1, "%-" + plan.runId() + "-%");
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    sent = rs.getLong(1);
                    pending = rs.getLong(2);
                }
            }
            long rowsA = 0;
            long rowsB = 0;
            int twiceA = 0;
            int twiceB = 0;
            int wrong = 0;
            int lost = 0;
            List<String> examples = new ArrayList<>();
            for (int n = 0; n < plan.orders(); n++) {
                String id = plan.orderId(n);
                Row ra = a.get(id);
                Row rb = b.get(id);
                rowsA += ra == null ? 0 : ra.count;
                rowsB += rb == null ? 0 : rb.count;
                if (ra == null || rb == null) {
                    lost++;
                    example(examples, "lost", id, ra == null ? "no order row" : "no shipment");
                }
                if (ra != null && ra.count > 1) {
                    twiceA++;
                    example(examples, "twice in orders", id, ra.count + " rows");
                }
                if (rb != null && rb.count > 1) {
                    twiceB++;
                    example(examples, "twice in shipments", id, rb.count + " rows");
                }
                if (ra != null && rb != null && !(ra.minEvent.equals(rb.minEvent) && ra.maxEvent.equals(rb.maxEvent))) {
                    wrong++;
                    example(examples, "another event", id, "order row sent " + ra.minEvent + ", shipment has "
                            + rb.minEvent);
                }
            }
            return new Ledger(plan.orders(), rowsA, twiceA, sent, pending, rowsB, twiceB, wrong, lost,
                    List.copyOf(examples));
        }
    }

    private record Row(long count, String minEvent, String maxEvent) {
    }

    private static Map<String, Row> perOrder(Connection c, String sql, String prefix) throws SQLException {
        Map<String, Row> rows = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, prefix);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.put(rs.getString(1), new Row(rs.getLong(2), rs.getString(3), rs.getString(4)));
                }
            }
        }
        return rows;
    }

    private static void example(List<String> examples, String kind, String id, String detail) {
        if (examples.stream().filter(e -> e.startsWith(kind + ":")).count() < 10) {
            examples.add(kind + ": " + id + " (" + detail + ")");
        }
    }
}

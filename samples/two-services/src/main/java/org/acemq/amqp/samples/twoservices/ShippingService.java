package org.acemq.amqp.samples.twoservices;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler.TransactionalWork;

/**
 * Service B, the shipping service: consumes the {@code OrderAccepted} events the {@link OrderService} sends and writes
 * one row to its {@code shipments} table per event, in one transaction with the store's confirm
 * ({@link JdbcTransactionalHandler}).
 *
 * <p>It keys by message-id, the consumer's default: the order service's events carry ids derived from the command's
 * key, so an event dispatched twice (the order service died after sending it and before marking it sent) arrives
 * with the same id and is absorbed as a duplicate. Its tables live in a schema of its own, as if in a database of its
 * own; {@code shipments} has no unique constraint on the order id, so that a second row would show.
 */
public final class ShippingService {

    /** The default schema of the service's tables. */
    public static final String DEFAULT_SCHEMA = "shipping_service";

    private ShippingService() {
    }

    /**
     * @param schema the service's schema
     * @return the statements creating the schema and the {@code shipments} table if missing
     */
    public static List<String> tables(String schema) {
        return List.of(
                "CREATE SCHEMA IF NOT EXISTS " + schema,
                "CREATE TABLE IF NOT EXISTS " + schema + ".shipments (seq bigserial PRIMARY KEY,"
                        + " order_id text NOT NULL, event_id text NOT NULL,"
                        + " created_at timestamptz NOT NULL DEFAULT clock_timestamp())",
                "CREATE INDEX IF NOT EXISTS shipments_order_id ON " + schema + ".shipments (order_id)");
    }

    /**
     * Creates the service's tables and its store's table where missing.
     *
     * @param db the service's database
     * @param store the service's store
     * @param schema the service's schema
     * @throws SQLException if the database refuses
     */
    public static void createSchema(DataSource db, JdbcIdempotencyStore store, String schema) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            for (String sql : tables(schema)) {
                s.execute(sql);
            }
        }
        store.createSchema();
    }

    /**
     * @param storePool the pool the store uses
     * @param schema the service's schema: the store's table is {@code <schema>.acemq_idempotency}
     * @return the store's builder
     */
    public static JdbcIdempotencyStore.Builder store(DataSource storePool, String schema) {
        return JdbcIdempotencyStore.builder(storePool).tableName(schema + ".acemq_idempotency");
    }

    /**
     * @param schema the service's schema
     * @return the work for one event: one row in {@code shipments}, with the event's message-id
     */
    public static TransactionalWork work(String schema) {
        String insert = "INSERT INTO " + schema + ".shipments (order_id, event_id) VALUES (?, ?)";
        return (envelope, connection) -> {
            if (!(envelope.applicationProperties().get(OrderService.ORDER_ID) instanceof String orderId)) {
                throw new PermanentMessageException("shipping:invalid-event", "OrderAccepted " + envelope.messageId()
                        + " has no application property " + OrderService.ORDER_ID, null);
            }
            try (PreparedStatement ps = connection.prepareStatement(insert)) {
                ps.setString(1, orderId);
                ps.setString(2, String.valueOf(envelope.messageId()));
                ps.executeUpdate();
            }
        };
    }

    /**
     * @param store the service's store: the same instance the consumer is given
     * @param handlerPool where the transactions come from: the same database as the store's table
     * @param schema the service's schema
     * @return the service's handler
     */
    public static MessageHandler handler(JdbcIdempotencyStore store, DataSource handlerPool, String schema) {
        return JdbcTransactionalHandler.of(store, handlerPool, work(schema));
    }

    /**
     * @param events the address the events arrive on
     * @param handler {@link #handler} (or the same work behind a handler of the caller's)
     * @return the subscription's builder, keyed by message-id (the default)
     */
    public static Subscription.Builder subscription(String events, MessageHandler handler) {
        return Subscription.builder(events, handler);
    }
}

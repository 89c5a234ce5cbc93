package org.acemq.amqp.samples.twoservices;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler.TransactionalWork;

/**
 * Service A, the order service: consumes {@code PlaceOrder} commands, writes one row to its {@code orders} table and
 * sends one {@code OrderAccepted} event, all in one database transaction with the store's confirm.
 *
 * <ul>
 *   <li><b>Keyed by the business order id</b> ({@link KeySource#applicationProperty} {@value #ORDER_ID}): a publisher
 *       that retries a command under a new message-id is absorbed like a redelivery of the same one.</li>
 *   <li><b>{@link JdbcTransactionalHandler}</b>: the order row, the store's confirm and the event (a row of the
 *       store's outbox table) commit together or not at all. The runtime dispatches the event after the commit; a
 *       crash in between leaves it pending, and the next copy of the command (the broker redelivers it: it was never
 *       accepted) dispatches it before it is accepted.</li>
 *   <li>The event's message-id is the one {@link Envelope#send} derives from the command's key and the send's
 *       position, so every dispatch of it carries the same id and the shipping service, keyed by message-id,
 *       absorbs a repeat.</li>
 * </ul>
 *
 * The tables live in a schema of the service's own ({@link #tables(String)}); the store's table and its outbox
 * ({@code acemq_idempotency}, {@code acemq_outbox}) sit next to them in the same schema, which is what lets one
 * transaction hold all three. {@code orders} has no unique constraint on the order id on purpose: the demo and the
 * chain test count rows per order to show that the consumer, not a constraint, keeps it to one.
 */
public final class OrderService {

    /** The application property that carries the business order id, on commands and events. */
    public static final String ORDER_ID = "orderId";
    /** The application properties a command carries besides the order id. */
    public static final String CUSTOMER = "customer";
    /** The order's amount in cents. */
    public static final String AMOUNT = "amount";
    /** The subject of the event the service sends. */
    public static final String ORDER_ACCEPTED = "OrderAccepted";
    /** The default schema of the service's tables. */
    public static final String DEFAULT_SCHEMA = "order_service";

    private OrderService() {
    }

    /**
     * @param schema the service's schema
     * @return the statements creating the schema and the {@code orders} table if missing (the store's own tables come
     *     from {@link JdbcIdempotencyStore#createSchema()})
     */
    public static List<String> tables(String schema) {
        return List.of(
                "CREATE SCHEMA IF NOT EXISTS " + schema,
                "CREATE TABLE IF NOT EXISTS " + schema + ".orders (seq bigserial PRIMARY KEY, order_id text NOT NULL,"
                        + " customer text NOT NULL, amount_cents bigint NOT NULL, command_id text NOT NULL,"
                        + " event_id text NOT NULL, placed_at timestamptz NOT NULL DEFAULT clock_timestamp())",
                "CREATE INDEX IF NOT EXISTS orders_order_id ON " + schema + ".orders (order_id)");
    }

    /**
     * Creates the service's tables and its store's tables (idempotency and outbox) where missing.
     *
     * @param db the service's database
     * @param store the service's store (its table names)
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
     * @param storePool the pool the store uses for claims, confirms and the outbox marks
     * @param schema the service's schema: the store's table is {@code <schema>.acemq_idempotency}, its outbox
     *     {@code <schema>.acemq_outbox}
     * @return the store's builder, for the lease and retention a deployment chooses
     */
    public static JdbcIdempotencyStore.Builder store(DataSource storePool, String schema) {
        return JdbcIdempotencyStore.builder(storePool).tableName(schema + ".acemq_idempotency");
    }

    /**
     * The service's work for one command, run by {@link JdbcTransactionalHandler} inside the transaction that also
     * records the confirm: one row in {@code orders}, one {@code OrderAccepted} sent through the envelope.
     *
     * @param schema the service's schema
     * @param events the address the events go to
     * @return the work
     */
    public static TransactionalWork work(String schema, String events) {
        String insert = "INSERT INTO " + schema + ".orders (order_id, customer, amount_cents, command_id, event_id)"
                + " VALUES (?, ?, ?, ?, ?)";
        return (envelope, connection) -> {
            Map<String, Object> properties = envelope.applicationProperties();
            String orderId = (String) properties.get(ORDER_ID); // present: it is the key, a command without it is rejected
            Object customer = properties.get(CUSTOMER);
            if (!(customer instanceof String) || !(properties.get(AMOUNT) instanceof Number amount)) {
                throw new PermanentMessageException("order:invalid-command", "PlaceOrder " + orderId
                        + " needs the application properties customer (string) and amount (number)", null);
            }
            String eventId = envelope.send(events, OutgoingMessage.builder(
                            "{\"orderId\":\"" + orderId + "\",\"amountCents\":" + amount.longValue() + "}")
                    .subject(ORDER_ACCEPTED)
                    .contentType("application/json")
                    .applicationProperty(ORDER_ID, orderId)
                    .build());
            try (PreparedStatement ps = connection.prepareStatement(insert)) {
                ps.setString(1, orderId);
                ps.setString(2, (String) customer);
                ps.setLong(3, amount.longValue());
                ps.setString(4, String.valueOf(envelope.messageId()));
                ps.setString(5, eventId);
                ps.executeUpdate();
            }
        };
    }

    /**
     * @param store the service's store: the same instance the consumer is given
     * @param handlerPool where the transactions come from: the same database as the store's table
     * @param schema the service's schema
     * @param events the address the events go to
     * @return the service's handler
     */
    public static MessageHandler handler(JdbcIdempotencyStore store, DataSource handlerPool, String schema,
            String events) {
        return JdbcTransactionalHandler.of(store, handlerPool, work(schema, events));
    }

    /**
     * @param commands the address the commands arrive on
     * @param handler {@link #handler} (or the same work behind a handler of the caller's)
     * @return the subscription's builder, keyed by the order id, for the concurrency and timings a deployment chooses
     */
    public static Subscription.Builder subscription(String commands, MessageHandler handler) {
        return Subscription.builder(commands, handler).key(KeySource.applicationProperty(ORDER_ID));
    }
}

package org.acemq.amqp.consumer;

import java.lang.reflect.Proxy;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import javax.sql.DataSource;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.store.jdbc.JdbcTransactionalHandler;

/**
 * A consumer in a process of its own, for {@link OutboxSweepIT}: on the JDBC store with PostgreSQL, each message is
 * handled by a {@link JdbcTransactionalHandler} whose work writes a row to {@code outbox_orders} and sends messages
 * through the envelope (written to the outbox in the same transaction). Once that transaction committed, the process
 * prints {@code committed <key>} and halts at once: it dies between the commit and the dispatch, leaving the messages
 * pending in the outbox and the incoming message unsettled.
 *
 * <p>Arguments: broker host, broker port, JDBC URL, user ({@code -} for none), password ({@code -} for none), store
 * table, queue, address to send to, messages to send per incoming message.
 */
public final class OutboxCrashingConsumerMain {

    /** The exit status of the halt after the commit. */
    static final int HALTED = 99;

    private OutboxCrashingConsumerMain() {
    }

    public static void main(String[] args) {
        DataSource db = dataSource(args[2], args[3].equals("-") ? null : args[3], args[4].equals("-") ? null : args[4]);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(db).tableName(args[5]).build();
        String address = args[7];
        int sends = Integer.parseInt(args[8]);
        JdbcTransactionalHandler work = JdbcTransactionalHandler.of(store, db, (envelope, connection) -> {
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO outbox_orders (id) VALUES (?)")) {
                ps.setString(1, envelope.id());
                ps.executeUpdate();
            }
            for (int i = 0; i < sends; i++) {
                envelope.send(address, OutgoingMessage.builder("accepted " + envelope.messageId() + " #" + i)
                        .subject("OrderAccepted").applicationProperty("orderId", String.valueOf(envelope.messageId()))
                        .build());
            }
        });
        AmqpConsumer.builder()
                .name("crashing")
                .connection(ConnectionSettings.builder(args[0], Integer.parseInt(args[1])).build())
                .store(store)
                .subscribe(Subscription.builder(args[6], envelope -> {
                    work.handle(envelope);
                    System.out.println("committed " + envelope.id());
                    System.out.flush();
                    Runtime.getRuntime().halt(HALTED); // between the commit and the dispatch
                }).build())
                .start();
        System.out.println("ready");
        System.out.flush();
    }

    /** @return an unpooled DataSource: a new connection per {@code getConnection()}, nothing else supported */
    private static DataSource dataSource(String url, String user, String password) {
        return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, arguments) -> {
                    if (method.getName().equals("getConnection")) {
                        return arguments == null || arguments.length == 0
                                ? DriverManager.getConnection(url, user, password)
                                : DriverManager.getConnection(url, (String) arguments[0], (String) arguments[1]);
                    }
                    if (method.getName().equals("toString")) {
                        return "DataSource[" + url + "]";
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }
}

package org.acemq.amqp.reliability;

/** The harness's database server, which it can stop and start again on the same data directory and port. */
interface ManagedDatabase extends AutoCloseable {

    /** @return this, started */
    ManagedDatabase start();

    void stop();

    default void restart() {
        stop();
        start();
    }

    /** @return the port the server listens on */
    int port();

    /** @return a JDBC URL reaching this product on {@code port} (the server's own port or the proxy's) */
    String jdbcUrl(int port);

    /** @return the user name the harness connects as */
    String user();

    /** @return the product, for messages */
    String product();

    @Override
    void close();
}

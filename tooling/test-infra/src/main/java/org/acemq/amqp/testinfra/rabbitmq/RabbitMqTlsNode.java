package org.acemq.amqp.testinfra.rabbitmq;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A private RabbitMQ node with a TLS listener (AMQP 1.0 and 0-9-1 over TLS) next to its plain one, started from the
 * installed Debian package like {@link RabbitMqProvider}'s local node, for TLS tests. The listener presents the given
 * certificate and verifies a client certificate against the given authority when the client sends one (clients without
 * one are accepted). Always a node of its own, whatever {@link RabbitMqProvider#MODE_PROPERTY} says: a TLS set-up
 * cannot be had from Testcontainers' image or an existing broker without configuring them for it.
 *
 * <p>Close it; a JVM shutdown hook and a watchdog stop it otherwise.
 */
public final class RabbitMqTlsNode implements AutoCloseable {

    private final LocalRabbitMqNode node;
    private final RabbitMq broker;

    private RabbitMqTlsNode(LocalRabbitMqNode node) {
        this.node = node;
        this.broker = new RabbitMq(RabbitMq.Source.LOCAL_NODE, node.host(), node.amqpPort(), "guest", "guest", node)
                .verify();
    }

    /**
     * @param caPem the certificate authority client certificates must chain to, PEM
     * @param certificatePem the node's certificate, PEM
     * @param keyPem the node's private key, unencrypted PKCS#8 PEM
     * @return the running node
     * @throws RabbitMqUnavailableException if the Debian package is not installed, saying how to install it
     * @throws IllegalStateException if the node does not start
     */
    public static RabbitMqTlsNode start(Path caPem, Path certificatePem, Path keyPem) {
        if (!LocalRabbitMqNode.installed()) {
            throw new RabbitMqUnavailableException("A RabbitMQ node with TLS needs the Debian package rabbitmq-server ("
                    + LocalRabbitMqNode.SCRIPTS.resolve("rabbitmq-server") + " not found): apt-get install "
                    + "rabbitmq-server (.ci/run does it)");
        }
        LocalRabbitMqNode node = LocalRabbitMqNode.start(new LocalRabbitMqNode.TlsFiles(
                Objects.requireNonNull(caPem, "caPem"), Objects.requireNonNull(certificatePem, "certificatePem"),
                Objects.requireNonNull(keyPem, "keyPem")));
        try {
            return new RabbitMqTlsNode(node);
        } catch (RuntimeException e) {
            node.close();
            throw e;
        }
    }

    /** @return the broker, over its plain listener (to declare queues, send and count messages) */
    public RabbitMq broker() {
        return broker;
    }

    /** @return the TLS listener's port, on {@link RabbitMq#host()} */
    public int tlsPort() {
        return node.tlsPort();
    }

    @Override
    public void close() {
        node.close();
    }

    @Override
    public String toString() {
        return broker + ", TLS on " + node.host() + ":" + node.tlsPort();
    }
}

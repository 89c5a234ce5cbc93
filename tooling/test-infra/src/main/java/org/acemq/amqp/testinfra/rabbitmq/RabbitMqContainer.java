package org.acemq.amqp.testinfra.rabbitmq;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.Transferable;
import org.testcontainers.utility.DockerImageName;

/**
 * RabbitMQ 4.x in Docker through Testcontainers ({@value RabbitMqProvider#DOCKER_IMAGE}; AMQP 1.0 is built in).
 * The image's own configuration lets {@code guest} in from anywhere; a file added to {@code conf.d} imports the
 * dead-letter policy at boot. A restart is {@code rabbitmqctl stop_app} / {@code start_app} inside the container, so
 * the mapped port stays the same.
 */
final class RabbitMqContainer implements BrokerControl {

    static final int AMQP_PORT = 5672;
    private static final String DEFINITIONS = "/etc/rabbitmq/acemq-interop-definitions.json";

    private final GenericContainer<?> container;

    private RabbitMqContainer(GenericContainer<?> container) {
        this.container = container;
    }

    /** Starts a container and waits until the broker accepts clients. */
    @SuppressWarnings("resource") // closed by close() or the shutdown hook
    static RabbitMqContainer start() {
        GenericContainer<?> c = new GenericContainer<>(DockerImageName.parse(RabbitMqProvider.DOCKER_IMAGE))
                .withExposedPorts(AMQP_PORT)
                .withCopyToContainer(Transferable.of(DeadLettering.definitionsJson()), DEFINITIONS)
                .withCopyToContainer(Transferable.of("load_definitions = " + DEFINITIONS + "\n"),
                        "/etc/rabbitmq/conf.d/90-acemq-interop.conf")
                .waitingFor(Wait.forLogMessage(".*Server startup complete.*", 1)
                        .withStartupTimeout(Duration.ofMinutes(2)));
        c.start();
        RabbitMqContainer control = new RabbitMqContainer(c);
        Runtime.getRuntime().addShutdownHook(new Thread(control::close, "acemq-testcontainers-rabbitmq-stop"));
        return control;
    }

    String host() {
        return container.getHost();
    }

    int port() {
        return container.getMappedPort(AMQP_PORT);
    }

    @Override
    public void restart() {
        ctl("stop_app");
        ctl("start_app");
        ctl("await_startup");
    }

    @Override
    public Path logFile() {
        return null;
    }

    @Override
    public void close() {
        container.stop();
    }

    private void ctl(String command) {
        try {
            ExecResult r = container.execInContainer("rabbitmqctl", command);
            if (r.getExitCode() != 0) {
                throw new IllegalStateException("rabbitmqctl " + command + " in the container failed: " + r.getStderr());
            }
        } catch (IOException e) {
            throw new IllegalStateException("rabbitmqctl " + command + " in the container could not be run: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}

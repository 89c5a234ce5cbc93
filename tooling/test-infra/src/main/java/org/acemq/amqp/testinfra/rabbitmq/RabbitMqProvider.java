package org.acemq.amqp.testinfra.rabbitmq;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.acemq.amqp.testinfra.Once;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;

/**
 * Finds a real RabbitMQ for tests, once per JVM, the way {@code PostgresProvider} finds PostgreSQL.
 *
 * <p>The first option that works wins:
 * <ol>
 *   <li>the environment variable {@value #URL_ENV} ({@code amqp://host:port}, with {@value #USER_ENV} and
 *       {@value #PASSWORD_ENV}, default {@code guest}/{@code guest}): an existing broker. The tests also need
 *       {@value #CTL_ENV}, a command that runs {@code rabbitmqctl} on it (to set the dead-letter policy and to restart
 *       it);</li>
 *   <li>Testcontainers ({@value #DOCKER_IMAGE}), if a Docker daemon is available;</li>
 *   <li>a private node started from the installed Debian package {@code rabbitmq-server} ({@link LocalRabbitMqNode}).
 *       {@code .ci/run} installs the package when it is missing.</li>
 * </ol>
 * If none works, {@link #shared()} throws {@link RabbitMqUnavailableException}, whose message says how to provide one.
 * It never skips tests silently. A broker named by {@value #URL_ENV} that cannot be used is an error, not a reason to
 * fall back to another one.
 *
 * <p>Set {@code -D}{@value #MODE_PROPERTY}{@code =env|testcontainers|local} (or the environment variable
 * {@value #MODE_ENV}) to force one option; the default {@code auto} tries them in order.
 *
 * <p><b>Threading:</b> {@link #shared()} is thread-safe; the first caller starts the broker and the others wait.
 */
public final class RabbitMqProvider {

    /** Environment variable naming an existing broker, e.g. {@code amqp://rabbit:5672}. */
    public static final String URL_ENV = "ACEMQ_TEST_RABBITMQ_URL";
    /** Environment variable with the user name for {@link #URL_ENV} (default {@code guest}). */
    public static final String USER_ENV = "ACEMQ_TEST_RABBITMQ_USER";
    /** Environment variable with the password for {@link #URL_ENV} (default {@code guest}). */
    public static final String PASSWORD_ENV = "ACEMQ_TEST_RABBITMQ_PASSWORD";
    /** Environment variable with a command that runs {@code rabbitmqctl} on the broker of {@link #URL_ENV}. */
    public static final String CTL_ENV = "ACEMQ_TEST_RABBITMQ_CTL";
    /** System property forcing one option: {@code auto} (default), {@code env}, {@code testcontainers}, {@code local}. */
    public static final String MODE_PROPERTY = "acemq.test.rabbitmq";
    /** Environment variable equivalent of {@link #MODE_PROPERTY}; the system property wins. */
    public static final String MODE_ENV = "ACEMQ_TEST_RABBITMQ";
    /** The Docker image Testcontainers runs. */
    public static final String DOCKER_IMAGE = "rabbitmq:4.1";

    private static final Logger LOG = LoggerFactory.getLogger(RabbitMqProvider.class);
    private static final Once<RabbitMq> SHARED = new Once<>(() -> locate(System.getenv()));

    private RabbitMqProvider() {
    }

    /**
     * @return the JVM-wide RabbitMQ, started or located on the first call
     * @throws RabbitMqUnavailableException if no option works (again on every later call)
     */
    public static RabbitMq shared() {
        return SHARED.get();
    }

    static RabbitMq locate(Map<String, String> env) {
        String mode = mode(env);
        long start = System.nanoTime();
        List<String> tried = new ArrayList<>();
        RabbitMq broker = switch (mode) {
            case "auto" -> fromEnvironment(env, tried, false);
            case "env" -> fromEnvironment(env, tried, true);
            case "testcontainers", "docker" -> fromTestcontainers(tried);
            case "local" -> fromLocalNode(tried);
            default -> throw new RabbitMqUnavailableException(MODE_PROPERTY + " must be one of auto, env, "
                    + "testcontainers, local, but was '" + mode + "'");
        };
        if (broker == null && mode.equals("auto")) {
            broker = fromTestcontainers(tried);
            if (broker == null) {
                broker = fromLocalNode(tried);
            }
        }
        if (broker == null) {
            throw new RabbitMqUnavailableException("No RabbitMQ for the tests (mode " + mode + "); tried:"
                    + String.join("", tried) + "\n" + RabbitMqUnavailableException.HOW_TO_PROVIDE);
        }
        LOG.info("RabbitMQ for tests: {} (ready in {} ms)", broker,
                Duration.ofNanos(System.nanoTime() - start).toMillis());
        return broker;
    }

    static String mode(Map<String, String> env) {
        String mode = System.getProperty(MODE_PROPERTY, env.getOrDefault(MODE_ENV, "auto")).trim()
                .toLowerCase(Locale.ROOT);
        return mode.isEmpty() ? "auto" : mode;
    }

    static RabbitMq fromEnvironment(Map<String, String> env, List<String> tried, boolean required) {
        String url = env.get(URL_ENV);
        if (url == null || url.isBlank()) {
            if (required) {
                tried.add("\n  - " + URL_ENV + " is not set");
            }
            return null;
        }
        // a set but unusable variable is a mistake to report, not a reason to test against another broker
        URI uri;
        try {
            uri = URI.create(url.trim());
        } catch (IllegalArgumentException e) {
            throw new RabbitMqUnavailableException(URL_ENV + " must look like amqp://host:5672, but was '" + url + "'");
        }
        if (!"amqp".equals(uri.getScheme()) || uri.getHost() == null) {
            throw new RabbitMqUnavailableException(URL_ENV + " must look like amqp://host:5672, but was '" + url + "'");
        }
        String ctl = env.get(CTL_ENV);
        if (ctl == null || ctl.isBlank()) {
            throw new RabbitMqUnavailableException(URL_ENV + " is set but " + CTL_ENV + " is not: the suite sets a "
                    + "dead-letter policy on the broker and restarts it, through a command that runs rabbitmqctl "
                    + "there (e.g. 'docker exec my-rabbit rabbitmqctl').");
        }
        int port = uri.getPort() > 0 ? uri.getPort() : 5672;
        CtlCommand control = new CtlCommand(ctl.trim());
        RabbitMq broker = new RabbitMq(RabbitMq.Source.ENVIRONMENT, uri.getHost(), port,
                env.getOrDefault(USER_ENV, "guest"), env.getOrDefault(PASSWORD_ENV, "guest"), control);
        try {
            broker.verify();
            control.setDeadLetterPolicy();
        } catch (RuntimeException e) {
            throw new RabbitMqUnavailableException("Cannot use " + URL_ENV + "=" + url + ": " + e.getMessage(), e);
        }
        return broker;
    }

    private static RabbitMq fromTestcontainers(List<String> tried) {
        try {
            if (!DockerClientFactory.instance().isDockerAvailable()) {
                tried.add("\n  - Testcontainers: no Docker environment available");
                return null;
            }
            RabbitMqContainer container = RabbitMqContainer.start();
            try {
                return new RabbitMq(RabbitMq.Source.TESTCONTAINERS, container.host(), container.port(), "guest",
                        "guest", container).verify();
            } catch (RuntimeException e) {
                container.close();
                throw e;
            }
        } catch (Throwable t) { // a LinkageError from docker-java must not stop us from trying the local node
            if (t instanceof VirtualMachineError vme) {
                throw vme;
            }
            tried.add("\n  - Testcontainers: " + t);
            return null;
        }
    }

    private static RabbitMq fromLocalNode(List<String> tried) {
        if (!LocalRabbitMqNode.installed()) {
            tried.add("\n  - local node: " + LocalRabbitMqNode.SCRIPTS.resolve("rabbitmq-server")
                    + " not found (Debian package rabbitmq-server not installed)");
            return null;
        }
        try {
            LocalRabbitMqNode node = LocalRabbitMqNode.start();
            try {
                return new RabbitMq(RabbitMq.Source.LOCAL_NODE, node.host(), node.amqpPort(), "guest", "guest", node)
                        .verify();
            } catch (RuntimeException e) {
                node.close();
                throw e;
            }
        } catch (RuntimeException e) {
            tried.add("\n  - local node from the Debian package: " + e.getMessage());
            return null;
        }
    }
}

package org.acemq.amqp.testinfra.rabbitmq;

/**
 * No RabbitMQ could be found or started for the tests. The message says what was tried and how to provide one; the
 * suites that need RabbitMQ fail with it rather than skip.
 */
public final class RabbitMqUnavailableException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** How to provide a RabbitMQ, appended to every "none found" message. */
    static final String HOW_TO_PROVIDE = "Provide one of: the Debian package (apt-get update && apt-get install -y "
            + "rabbitmq-server; .ci/run does this; the tests start a private node and leave the system service alone), "
            + "a Docker daemon (Testcontainers starts " + RabbitMqProvider.DOCKER_IMAGE + "), or an existing broker: "
            + RabbitMqProvider.URL_ENV + "=amqp://host:5672 with " + RabbitMqProvider.USER_ENV + "/"
            + RabbitMqProvider.PASSWORD_ENV + " (default guest/guest) and " + RabbitMqProvider.CTL_ENV
            + "=<command that runs rabbitmqctl on that broker, e.g. 'docker exec my-rabbit rabbitmqctl'>.";

    RabbitMqUnavailableException(String message) {
        super(message);
    }

    RabbitMqUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}

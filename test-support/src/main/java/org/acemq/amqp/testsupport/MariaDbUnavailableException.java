package org.acemq.amqp.testsupport;

/**
 * No MariaDB server could be found or started for the tests. The message says how to provide one; the causes of every
 * failed option are attached as suppressed exceptions.
 */
public final class MariaDbUnavailableException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    /** What to do about it, appended to every message. */
    static final String HOW_TO_FIX = "Provide a MariaDB server for the tests in one of these ways:\n"
            + "  1. set " + MariaDbProvider.URL_ENV + "=jdbc:mariadb://<host>:<port>/ (plus " + MariaDbProvider.USER_ENV
            + " and " + MariaDbProvider.PASSWORD_ENV + ") to use an existing server (MariaDB 10.11+ or MySQL 8); the "
            + "user must be allowed to create and drop databases, and the tests create and drop their own;\n"
            + "  2. or install and start Docker, so that Testcontainers can run mariadb:" + MariaDbProvider.DOCKER_TAG
            + ";\n"
            + "  3. or install the Debian package mariadb-server (apt-get install mariadb-server; .ci/run does it), "
            + "whose mariadbd and mariadb-install-db the tests run as a private instance (own data directory, socket "
            + "and port, never the system service); set " + MariaDbProvider.BIN_DIR_ENV + " if they are not in "
            + "/usr/sbin, /usr/bin or on the PATH.\n"
            + "Force one option with -D" + MariaDbProvider.MODE_PROPERTY + "=env|testcontainers|private "
            + "(or the environment variable " + MariaDbProvider.MODE_ENV + ").";

    MariaDbUnavailableException(String message) {
        super(message + "\n" + HOW_TO_FIX);
    }

    MariaDbUnavailableException(String message, Throwable cause) {
        super(message + "\n" + HOW_TO_FIX, cause);
    }
}

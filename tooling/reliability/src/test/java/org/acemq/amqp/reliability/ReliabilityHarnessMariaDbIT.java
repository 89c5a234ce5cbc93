package org.acemq.amqp.reliability;

/**
 * The CI reliability harness, both handler modes, with the store and the harness's tables on MariaDB: a private
 * {@code mariadbd} from the Debian package {@code mariadb-server} ({@link ManagedMariaDb}), restarted and made
 * unreachable by the database faults exactly as PostgreSQL is in {@link ReliabilityHarnessIT}, with every other fault
 * kind (kill -9 at each crash point, pauses, broker drops and restarts) the same. Same assertions: nothing lost, no
 * duplicate confirmed effect, and in transactional mode exactly one effect per message.
 */
class ReliabilityHarnessMariaDbIT extends ReliabilityHarnessIT {

    @Override
    String database() {
        return "mariadb";
    }
}

package org.acemq.amqp.store.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How the MariaDB / MySQL dialect tells a MariaDB server, whose claim takes {@code RETURNING}, from MySQL. */
class MariaDbVersionTest {

    @Test
    void mariaDb105AndLaterClaimWithReturning() {
        assertThat(MariaDbDialect.supportsReturning("10.11.19-MariaDB-0+deb12u1")).isTrue();
        assertThat(MariaDbDialect.supportsReturning("10.5.0-MariaDB")).isTrue();
        assertThat(MariaDbDialect.supportsReturning("11.4.2-MariaDB-log")).isTrue();
        // MySQL's Connector/J shows MariaDB's replication-compatible prefix
        assertThat(MariaDbDialect.supportsReturning("5.5.5-10.11.6-MariaDB-1:10.11.6+maria~ubu2204")).isTrue();
    }

    @Test
    void mySqlAndOlderMariaDbReadTheirClaimsBack() {
        assertThat(MariaDbDialect.supportsReturning("8.0.36")).isFalse();
        assertThat(MariaDbDialect.supportsReturning("8.4.0-commercial")).isFalse();
        assertThat(MariaDbDialect.supportsReturning("5.7.44-log")).isFalse();
        assertThat(MariaDbDialect.supportsReturning("10.4.32-MariaDB")).isFalse();
        assertThat(MariaDbDialect.supportsReturning("5.5.5-10.4.32-MariaDB")).isFalse();
        assertThat(MariaDbDialect.supportsReturning("MariaDB")).isFalse();
        assertThat(MariaDbDialect.supportsReturning(null)).isFalse();
    }
}

-- AceMQ consumer: the JDBC idempotency store's table on MariaDB 10.11+ / MySQL 8, for teams whose schema is owned by
-- Flyway (needs org.flywaydb:flyway-mysql beside flyway-core). Version 1: the table as JdbcIdempotencyStore's MariaDB
-- dialect creates it (/org/acemq/amqp/store/jdbc/mariadb.sql) for the default table name acemq_idempotency; the
-- starter's tests compare the two. Later schema changes come as V2, V3, ... in this location, never as edits here.
-- Run this location with a history table of its own (docs/spring-boot.md, "Schema"), so that its versions do not
-- collide with the application's. For another table name, copy the file into your own migrations and rename.
-- IF NOT EXISTS, so that it also baselines a table that the store created itself.
CREATE TABLE IF NOT EXISTS acemq_idempotency (
    id          VARBINARY(2048) NOT NULL,
    state       TINYINT         NOT NULL,
    owner       CHAR(36) CHARACTER SET ascii COLLATE ascii_bin,
    attempts    INT             NOT NULL,
    lease_until DATETIME(6),
    expires_at  DATETIME(6)     NOT NULL,
    fingerprint VARBINARY(512),
    claim_token BINARY(16),
    PRIMARY KEY (id),
    KEY acemq_idempotency_expires_at_idx (expires_at),
    CONSTRAINT acemq_idempotency_state_check CHECK (state IN (0, 1, 2))
) ENGINE = InnoDB;

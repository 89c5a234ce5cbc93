--liquibase formatted sql

-- AceMQ consumer: the JDBC idempotency store's table on MariaDB 10.11+ / MySQL 8, for teams whose schema is owned by
-- Liquibase. Include this file in your changelog and set acemq.store.jdbc.initialize-schema=false. The same schema
-- as JdbcIdempotencyStore.createSchema() on MariaDB (/org/acemq/amqp/store/jdbc/mariadb.sql) for the default table
-- name acemq_idempotency; the starter's tests compare the two. For another table name, copy this file into your own
-- changelog and rename. An applied changeset never changes: each schema change is a changeset of its own.

--changeset acemq:acemq-idempotency-mariadb-1 dbms:mariadb,mysql
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
--rollback DROP TABLE acemq_idempotency;

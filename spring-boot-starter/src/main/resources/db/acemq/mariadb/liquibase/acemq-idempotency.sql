--liquibase formatted sql

-- AceMQ consumer: the JDBC idempotency store's table on MariaDB 10.11+ / MySQL 8, for teams whose schema is owned by
-- Liquibase. Include this file in your changelog and set acemq.store.jdbc.initialize-schema=false. The same schema
-- as JdbcIdempotencyStore.createSchema() on MariaDB (/org/acemq/amqp/store/jdbc/mariadb.sql) for the default table
-- name acemq_idempotency; the starter's tests compare the two. For another table name, copy this file into your own
-- changelog and rename. An applied changeset never changes: each schema change is a changeset of its own.
-- The store's transactional outbox table, acemq_outbox, comes with the acemq-outbox-mariadb-1 changeset.

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
--changeset acemq:acemq-outbox-mariadb-1 dbms:mariadb,mysql
--comment: the transactional outbox: messages handlers send, written in their transactions (docs/jdbc-store.md, "Outbox")
CREATE TABLE IF NOT EXISTS acemq_outbox (
    incoming_key  VARBINARY(2048) NOT NULL,
    position      INT             NOT NULL,
    message_id    VARBINARY(4096) NOT NULL,
    address       VARBINARY(4096) NOT NULL,
    message       LONGBLOB        NOT NULL,
    created_at    DATETIME(6)     NOT NULL,
    dispatched_at DATETIME(6),
    retry_at      DATETIME(6),
    attempts      INT             NOT NULL DEFAULT 0,
    last_error    VARCHAR(1000) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    PRIMARY KEY (incoming_key, position),
    KEY acemq_outbox_dispatch_idx (dispatched_at, created_at, attempts),
    CONSTRAINT acemq_outbox_position_check CHECK (position >= 0)
) ENGINE = InnoDB;
--rollback DROP TABLE acemq_outbox;

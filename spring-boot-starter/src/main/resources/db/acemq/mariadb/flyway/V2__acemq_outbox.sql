-- AceMQ consumer on MariaDB 10.11+ / MySQL 8, version 2: the transactional outbox. Messages a handler sends through
-- its envelope with JdbcTransactionalHandler (or a database-transaction listener) are rows of this table, written in
-- the handler's transaction and dispatched after the commit. The same table as JdbcIdempotencyStore.createSchema()
-- on MariaDB (/org/acemq/amqp/store/jdbc/mariadb-outbox.sql) for the default names; the starter's tests compare the
-- two. A new table: version 1 does not change. What the columns mean: docs/jdbc-store.md, "Outbox".
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

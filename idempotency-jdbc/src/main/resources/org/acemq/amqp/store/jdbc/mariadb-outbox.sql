-- AceMQ JDBC store: the transactional outbox's table for MariaDB 10.11 or later and MySQL 8 (InnoDB).
-- ${table} is the (optionally database-qualified) outbox table name, quoted, and ${name} its unqualified part.
-- Statements are separated by a line holding only ';'. The columns mean what they mean on PostgreSQL
-- (postgresql-outbox.sql). Keys, ids and addresses are VARBINARY (UTF-8 bytes compared exactly), as in the store's
-- own table; the message is a LONGBLOB. Times are DATETIME(6) in UTC (UTC_TIMESTAMP(6)).
-- MariaDB has no partial index: one index on (dispatched_at, created_at, attempts) serves the sweep and the status
-- (the NULL range, in created_at order, covering the count of failing rows) and the purge (the range below the
-- retention).
CREATE TABLE IF NOT EXISTS ${table} (
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
    KEY ${name}_dispatch_idx (dispatched_at, created_at, attempts),
    CONSTRAINT ${name}_position_check CHECK (position >= 0)
) ENGINE = InnoDB
;

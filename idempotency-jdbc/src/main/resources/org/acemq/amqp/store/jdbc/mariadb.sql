-- AceMQ JDBC idempotency store: schema for MariaDB 10.11 or later and MySQL 8 (InnoDB).
-- ${table} is the (optionally database-qualified) table name, quoted, and ${name} its unqualified part. Statements
-- are separated by a line holding only ';'. The columns mean what they mean on PostgreSQL (postgresql.sql), plus:
--   claim_token: 16 random bytes written by the claim statement that won the row last; the claim reads it back to
--                learn whether it won (MariaDB has no INSERT ... RETURNING for an upsert).
-- id and fingerprint are VARBINARY: UTF-8 bytes compared exactly (no padding, no case folding), 512 characters need
-- at most 2048 bytes. Times are DATETIME(6) in UTC (UTC_TIMESTAMP(6)), valid to the year 9999.
CREATE TABLE IF NOT EXISTS ${table} (
    id          VARBINARY(2048) NOT NULL,
    state       TINYINT         NOT NULL,
    owner       CHAR(36) CHARACTER SET ascii COLLATE ascii_bin,
    attempts    INT             NOT NULL,
    lease_until DATETIME(6),
    expires_at  DATETIME(6)     NOT NULL,
    fingerprint VARBINARY(512),
    claim_token BINARY(16),
    PRIMARY KEY (id),
    KEY ${name}_expires_at_idx (expires_at),
    CONSTRAINT ${name}_state_check CHECK (state IN (0, 1, 2))
) ENGINE = InnoDB
;

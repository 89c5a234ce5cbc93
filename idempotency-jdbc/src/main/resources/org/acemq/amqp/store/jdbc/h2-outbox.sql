-- AceMQ JDBC store: the transactional outbox's table for H2 2.x (for tests, not production).
-- ${table} is the (optionally schema-qualified) outbox table name, quoted, and ${name} its unqualified part.
-- Statements are separated by a line holding only ';'. The columns mean what they mean on PostgreSQL
-- (postgresql-outbox.sql); one index serves the sweep, the status and the purge, as on MariaDB (mariadb-outbox.sql).
CREATE TABLE IF NOT EXISTS ${table} (
    incoming_key  VARCHAR(512)                NOT NULL,
    position      INTEGER                     NOT NULL,
    message_id    VARCHAR(4096)               NOT NULL,
    address       VARCHAR(4096)               NOT NULL,
    message       BLOB                        NOT NULL,
    created_at    TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    dispatched_at TIMESTAMP(6) WITH TIME ZONE,
    retry_at      TIMESTAMP(6) WITH TIME ZONE,
    attempts      INTEGER                     DEFAULT 0 NOT NULL,
    last_error    VARCHAR(1000),
    CONSTRAINT ${name}_pkey PRIMARY KEY (incoming_key, position),
    CONSTRAINT ${name}_position_check CHECK (position >= 0)
)
;
CREATE INDEX IF NOT EXISTS ${name}_dispatch_idx ON ${table} (dispatched_at, created_at, attempts)
;

-- AceMQ JDBC idempotency store: schema for H2 2.x (for tests, not production).
-- ${table} is the (optionally schema-qualified) table name, quoted, and ${name} its unqualified part. Statements are
-- separated by a line holding only ';'. The columns mean what they mean on MariaDB (mariadb.sql).
CREATE TABLE IF NOT EXISTS ${table} (
    id          VARCHAR(512)                NOT NULL,
    state       SMALLINT                    NOT NULL,
    owner       UUID,
    attempts    INTEGER                     NOT NULL,
    lease_until TIMESTAMP(6) WITH TIME ZONE,
    expires_at  TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    fingerprint VARCHAR(128),
    claim_token BINARY(16),
    CONSTRAINT ${name}_pkey PRIMARY KEY (id),
    CONSTRAINT ${name}_state_check CHECK (state IN (0, 1, 2))
)
;
CREATE INDEX IF NOT EXISTS ${name}_expires_at_idx ON ${table} (expires_at)
;

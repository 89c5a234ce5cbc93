-- AceMQ consumer: the JDBC idempotency store's table (PostgreSQL 12 or later) as one repeatable Flyway migration, for
-- applications that run AceMQ's schema in their own Flyway history: a repeatable migration has no version, so it
-- never collides with the application's V1, V2, ... Flyway runs it again whenever this file changes (a new AceMQ
-- version that changes the schema); every statement is IF NOT EXISTS, so that brings an existing table up to date
-- and changes nothing else. Same schema as db/acemq/flyway (V1 + V2) and JdbcIdempotencyStore.createSchema() for the
-- default table name acemq_idempotency; the starter's tests compare them. Use one location or the other, not both.
CREATE TABLE IF NOT EXISTS acemq_idempotency (
    lease_until timestamptz,
    expires_at  timestamptz NOT NULL,
    owner       uuid,
    attempts    integer     NOT NULL,
    state       smallint    NOT NULL,
    id          text        NOT NULL,
    fingerprint text,
    CONSTRAINT acemq_idempotency_pkey PRIMARY KEY (id),
    CONSTRAINT acemq_idempotency_state_check CHECK (state IN (0, 1, 2))
);

-- a table created before the fingerprint column existed
ALTER TABLE acemq_idempotency ADD COLUMN IF NOT EXISTS fingerprint text;

CREATE INDEX IF NOT EXISTS acemq_idempotency_expires_at_idx ON acemq_idempotency (expires_at);

-- AceMQ consumer: the JDBC store's transactional outbox table (PostgreSQL 12 or later) as a repeatable Flyway
-- migration, next to R__acemq_idempotency.sql, for applications that run AceMQ's schema in their own Flyway history.
-- Same table as db/acemq/flyway's V3 and JdbcIdempotencyStore.createSchema() for the default name acemq_outbox; the
-- starter's tests compare them. Every statement is IF NOT EXISTS.
CREATE TABLE IF NOT EXISTS acemq_outbox (
    created_at    timestamptz NOT NULL,
    dispatched_at timestamptz,
    retry_at      timestamptz,
    position      integer     NOT NULL,
    attempts      integer     NOT NULL DEFAULT 0,
    incoming_key  text        NOT NULL,
    message_id    text        NOT NULL,
    address       text        NOT NULL,
    last_error    text,
    message       bytea       NOT NULL,
    CONSTRAINT acemq_outbox_pkey PRIMARY KEY (incoming_key, position),
    CONSTRAINT acemq_outbox_position_check CHECK (position >= 0)
);

CREATE INDEX IF NOT EXISTS acemq_outbox_pending_idx ON acemq_outbox (created_at) WHERE dispatched_at IS NULL;

CREATE INDEX IF NOT EXISTS acemq_outbox_dispatched_idx ON acemq_outbox (dispatched_at) WHERE dispatched_at IS NOT NULL;

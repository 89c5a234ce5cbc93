--liquibase formatted sql

-- AceMQ consumer: the JDBC idempotency store's table (PostgreSQL 12 or later), for teams whose schema is owned by
-- Liquibase. Include this file in your changelog (or use it as spring.liquibase.change-log) and set
-- acemq.store.jdbc.initialize-schema=false. The same schema as JdbcIdempotencyStore.createSchema()
-- (/org/acemq/amqp/store/jdbc/postgresql.sql) for the default table name acemq_idempotency; the starter's tests
-- compare the two. For another table name, copy this file into your own changelog and rename.
-- The store's transactional outbox table, acemq_outbox, comes with the acemq-outbox-1 changeset (docs/jdbc-store.md,
-- "Outbox").
-- An applied changeset must never change (Liquibase checks its checksum): each schema change is a changeset of its own.

--changeset acemq:acemq-idempotency-1
CREATE TABLE IF NOT EXISTS acemq_idempotency (
    lease_until timestamptz,
    expires_at  timestamptz NOT NULL,
    owner       uuid,
    attempts    integer     NOT NULL,
    state       smallint    NOT NULL,
    id          text        NOT NULL,
    CONSTRAINT acemq_idempotency_pkey PRIMARY KEY (id),
    CONSTRAINT acemq_idempotency_state_check CHECK (state IN (0, 1, 2))
);
CREATE INDEX IF NOT EXISTS acemq_idempotency_expires_at_idx ON acemq_idempotency (expires_at);
--rollback DROP TABLE acemq_idempotency;

--changeset acemq:acemq-idempotency-2
--comment: the fingerprint recorded with each claim (null when none was given); nullable, so no table rewrite
ALTER TABLE acemq_idempotency ADD COLUMN IF NOT EXISTS fingerprint text;
--rollback ALTER TABLE acemq_idempotency DROP COLUMN fingerprint;
--changeset acemq:acemq-outbox-1
--comment: the transactional outbox: messages handlers send, written in their transactions (docs/jdbc-store.md, "Outbox")
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
--rollback DROP TABLE acemq_outbox;

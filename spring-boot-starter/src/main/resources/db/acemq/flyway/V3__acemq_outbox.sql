-- AceMQ consumer, version 3: the transactional outbox (PostgreSQL 12 or later). Messages a handler sends through its
-- envelope with JdbcTransactionalHandler (or a database-transaction listener) are rows of this table, written in the
-- handler's transaction and dispatched after the commit. The same table as JdbcIdempotencyStore.createSchema()
-- (/org/acemq/amqp/store/jdbc/postgresql-outbox.sql) for the default names (acemq_idempotency, acemq_outbox); the
-- starter's tests compare the two. A new table: nothing of versions 1 and 2 changes. What the columns mean:
-- docs/jdbc-store.md, "Outbox".
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

-- the pending rows only: the sweep, the pending count and the oldest pending row
CREATE INDEX IF NOT EXISTS acemq_outbox_pending_idx ON acemq_outbox (created_at) WHERE dispatched_at IS NULL;

-- the dispatched rows only: the purge
CREATE INDEX IF NOT EXISTS acemq_outbox_dispatched_idx ON acemq_outbox (dispatched_at) WHERE dispatched_at IS NOT NULL;

-- AceMQ JDBC store: the transactional outbox's table for PostgreSQL 12 or later.
-- ${table} is the (optionally schema-qualified) outbox table name and ${name} its unqualified part; the store
-- substitutes both after validating the configured name. Statements are separated by a line holding only ';'.
--
-- One row per message a handler sent through its envelope, written by JdbcTransactionalHandler in the handler's own
-- transaction, after the confirm of the incoming message:
--   incoming_key  the idempotency key of the incoming message whose handler sent it
--   position      its position among that handler's sends, from 0; (incoming_key, position) is the key, so a handler
--                 that runs again writes the same rows, never a second copy
--   message_id    the stable message-id it carries; address: where it goes
--   message       the whole message, AMQP-encoded by the runtime (opaque to the store)
--   created_at    when the transaction wrote it (database clock)
--   dispatched_at null while the message waits; set when the broker accepted it. Dispatched rows are deleted by
--                 purgeExpired() once they are older than the store's retention; pending rows never are.
--   retry_at      null, or the time until which a sweep that handed the row out (or a failed dispatch) holds it, so
--                 that the sweeps of other processes skip it meanwhile
--   attempts      failed dispatches so far; last_error: why the last one failed (at most 1000 characters)
-- Fixed-width columns first, for alignment.
CREATE TABLE IF NOT EXISTS ${table} (
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
    CONSTRAINT ${name}_pkey PRIMARY KEY (incoming_key, position),
    CONSTRAINT ${name}_position_check CHECK (position >= 0)
)
;
-- The rows that wait, oldest first: the sweep, the pending count and the age of the oldest read only this index. It
-- holds the pending rows alone, so it stays as small as the backlog however many dispatched rows the table keeps.
CREATE INDEX IF NOT EXISTS ${name}_pending_idx ON ${table} (created_at) WHERE dispatched_at IS NULL
;
-- Only the purge of dispatched rows uses this index.
CREATE INDEX IF NOT EXISTS ${name}_dispatched_idx ON ${table} (dispatched_at) WHERE dispatched_at IS NOT NULL
;

-- AceMQ consumer on H2 2.x (for tests, not production), version 2: the transactional outbox. The same table as
-- JdbcIdempotencyStore's H2 dialect creates (/org/acemq/amqp/store/jdbc/h2-outbox.sql) for the default name
-- acemq_outbox, quoted as the store quotes it; the starter's tests compare them.
CREATE TABLE IF NOT EXISTS "acemq_outbox" (
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
    CONSTRAINT acemq_outbox_pkey PRIMARY KEY (incoming_key, position),
    CONSTRAINT acemq_outbox_position_check CHECK (position >= 0)
);

CREATE INDEX IF NOT EXISTS acemq_outbox_dispatch_idx ON "acemq_outbox" (dispatched_at, created_at, attempts);

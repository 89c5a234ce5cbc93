--liquibase formatted sql

-- AceMQ consumer: the JDBC idempotency store's table on H2 2.x (for tests, not production), for test set-ups whose
-- schema is made by Liquibase. The same table as JdbcIdempotencyStore's H2 dialect creates
-- (/org/acemq/amqp/store/jdbc/h2.sql) for the default table name acemq_idempotency, quoted as the store quotes it
-- (H2 would make an unquoted name upper case); the starter's tests compare them. The store's
-- transactional outbox table, "acemq_outbox", comes with the acemq-outbox-h2-1 changeset.

--changeset acemq:acemq-idempotency-h2-1 dbms:h2
CREATE TABLE IF NOT EXISTS "acemq_idempotency" (
    id          VARCHAR(512)                NOT NULL,
    state       SMALLINT                    NOT NULL,
    owner       UUID,
    attempts    INTEGER                     NOT NULL,
    lease_until TIMESTAMP(6) WITH TIME ZONE,
    expires_at  TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    fingerprint VARCHAR(128),
    claim_token BINARY(16),
    CONSTRAINT acemq_idempotency_pkey PRIMARY KEY (id),
    CONSTRAINT acemq_idempotency_state_check CHECK (state IN (0, 1, 2))
);
CREATE INDEX IF NOT EXISTS acemq_idempotency_expires_at_idx ON "acemq_idempotency" (expires_at);
--rollback DROP TABLE "acemq_idempotency";
--changeset acemq:acemq-outbox-h2-1 dbms:h2
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
--rollback DROP TABLE "acemq_outbox";

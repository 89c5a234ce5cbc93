-- AceMQ consumer: the JDBC idempotency store's table (PostgreSQL 12 or later), for teams whose schema is owned by
-- Flyway. Version 1: the table as the first release of the store created it; V2 adds the fingerprint column. Together
-- they give the same schema as JdbcIdempotencyStore.createSchema() (/org/acemq/amqp/store/jdbc/postgresql.sql) for
-- the default table name acemq_idempotency; the starter's tests compare the two.
-- Versions 1 and 2 would collide with an application's own V1 and V2: run this location with a history table of its
-- own (docs/spring-boot.md, "Schema"), or use classpath:db/acemq/flyway-repeatable in the application's history.
-- IF NOT EXISTS, so that it also baselines a table that the store created itself.
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

-- AceMQ JDBC idempotency store: schema for PostgreSQL 12 or later.
-- ${table} is the (optionally schema-qualified) table name and ${name} its unqualified part; JdbcIdempotencyStore
-- substitutes both after validating the configured name. Statements are separated by a line holding only ';'.
--
-- One row per message id.
--   state 0 = claimed:   owner holds a lease until lease_until (attempt number = attempts)
--   state 1 = confirmed: the work is done; a redelivery is a duplicate
--   state 2 = released:  the last attempt failed; anyone may claim it again (attempts is kept)
-- expires_at is when the row may be forgotten: lease_until + retention for a claim (so that the attempt count
-- survives a crashed owner), now() + retention for a confirmed or released row. A row with expires_at <= now()
-- is treated as absent, and purgeExpired() deletes it. Every comparison uses the database clock (now()).
-- fingerprint is what the claim that holds (or confirmed) the id recorded about the message's content (null: none);
-- a new claim replaces it, a confirm keeps it.
-- Columns are ordered for alignment: fixed-width 8-byte columns first, the variable-length ones last.
CREATE TABLE IF NOT EXISTS ${table} (
    lease_until timestamptz,
    expires_at  timestamptz NOT NULL,
    owner       uuid,
    attempts    integer     NOT NULL,
    state       smallint    NOT NULL,
    id          text        NOT NULL,
    fingerprint text,
    CONSTRAINT ${name}_pkey PRIMARY KEY (id),
    CONSTRAINT ${name}_state_check CHECK (state IN (0, 1, 2))
)
;
-- Upgrades a table created by a version without fingerprints. The catalog is checked first so that a table that has
-- the column is not locked: ALTER TABLE takes an ACCESS EXCLUSIVE lock even when it ends up doing nothing, and would
-- queue behind (and stall) the store's running statements and transactional handlers at every start.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${table}'::regclass AND attname = 'fingerprint'
                   AND NOT attisdropped) THEN
        ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS fingerprint text;
    END IF;
END $$
;
-- Only purgeExpired() uses this index.
CREATE INDEX IF NOT EXISTS ${name}_expires_at_idx ON ${table} (expires_at)
;

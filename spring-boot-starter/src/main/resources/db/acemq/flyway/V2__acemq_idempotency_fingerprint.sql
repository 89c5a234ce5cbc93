-- AceMQ consumer, version 2: the fingerprint recorded with each claim (a hash of the message's content, null when
-- none was given), so that a copy with the same key and other content is told from a duplicate. A nullable column
-- without a default: PostgreSQL adds it without rewriting the table; rows written before it hold null.
ALTER TABLE acemq_idempotency ADD COLUMN IF NOT EXISTS fingerprint text;

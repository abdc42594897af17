-- Reservations and sessions that cannot hold an event (PostgreSQL dialect;
-- see migrations/sqlite/0044_short_reservations.sql).
ALTER TABLE attempts ADD COLUMN reserved_until BIGINT;
ALTER TABLE sessions ADD COLUMN client_key TEXT;

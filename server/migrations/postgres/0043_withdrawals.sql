-- A guest withdraws an upload (PostgreSQL dialect; see
-- migrations/sqlite/0043_withdrawals.sql).
ALTER TABLE media ADD COLUMN withdrawn_at BIGINT;

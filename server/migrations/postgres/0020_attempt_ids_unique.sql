-- Attempt ids are unique across all sessions (PostgreSQL dialect; same
-- as migrations/sqlite/0020_attempt_ids_unique.sql). Rows of databases made
-- before, where one id is in two sessions, stay readable by their own
-- session: all but the first of each id are marked legacy_duplicate and
-- left out of the unique index.
ALTER TABLE attempts ADD COLUMN legacy_duplicate BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE attempts SET legacy_duplicate = TRUE
 WHERE row_id NOT IN (SELECT MIN(row_id) FROM attempts GROUP BY id);
CREATE UNIQUE INDEX attempts_id_unique ON attempts (id) WHERE legacy_duplicate = FALSE;

-- The quotas count per event (bytes) and per event and hour (sessions).
CREATE INDEX attempts_event_state ON attempts (event_id, state);
CREATE INDEX sessions_event_created ON sessions (event_id, created_at);

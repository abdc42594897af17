-- Attempt ids are unique across all sessions: an id another session has is
-- refused (422 id_reused), never a second row. Databases made before this
-- may hold one id in two sessions; those rows stay, each readable by its
-- own session: all but the first of each id are marked legacy_duplicate and
-- left out of the unique index, so every id has exactly one indexed row and
-- no new row can share it.
ALTER TABLE attempts ADD COLUMN legacy_duplicate BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE attempts SET legacy_duplicate = TRUE
 WHERE row_id NOT IN (SELECT MIN(row_id) FROM attempts GROUP BY id);
CREATE UNIQUE INDEX attempts_id_unique ON attempts (id) WHERE legacy_duplicate = FALSE;

-- The quotas count per event (bytes) and per event and hour (sessions).
CREATE INDEX attempts_event_state ON attempts (event_id, state);
CREATE INDEX sessions_event_created ON sessions (event_id, created_at);

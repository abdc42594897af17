-- A festival's size (issue 48), PostgreSQL dialect; see
-- migrations/sqlite/0047_change_cursor.sql.
ALTER TABLE events ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE media ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE media ADD COLUMN created_seq BIGINT NOT NULL DEFAULT 0;
CREATE INDEX media_changes ON media (event_id, change_seq);
CREATE INDEX media_listed ON media (event_id, created_at, id) WHERE withdrawn_at IS NULL;
CREATE INDEX media_listed_by_state ON media (event_id, moderation, created_at, id, withdrawn_at) WHERE withdrawn_at IS NULL;

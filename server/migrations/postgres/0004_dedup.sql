-- The content identity (PostgreSQL dialect; same as
-- migrations/sqlite/0004_dedup.sql). Events made before this version keep
-- what they did: every upload is kept (`none`).
ALTER TABLE events ADD COLUMN dedup TEXT NOT NULL DEFAULT 'none' CHECK (dedup IN ('none', 'guest', 'event'));

-- An attempt confirmed as a duplicate points to the media another attempt
-- stored.
ALTER TABLE attempts ADD COLUMN duplicate_of TEXT REFERENCES media(id);
CREATE INDEX attempts_duplicates ON attempts (event_id) WHERE duplicate_of IS NOT NULL;

-- Content key -> media, unique per scope (scope_id 0: the whole event; a
-- session id: that guest's session), written with its media in one
-- transaction.
CREATE TABLE content_index (
    event_id     BIGINT  NOT NULL REFERENCES events(id),
    scope_id     BIGINT  NOT NULL,
    content_key  TEXT    NOT NULL,
    media_id     TEXT    NOT NULL REFERENCES media(id) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (event_id, scope_id, content_key)
);

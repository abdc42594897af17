-- The content identity (issue 19): an event's dedup scope, and an index of
-- the bytes already stored in each scope.
--
-- Events made before this version keep what they did: every upload is kept
-- (`none`). Only the API's default for a new event is `event`.
ALTER TABLE events ADD COLUMN dedup TEXT NOT NULL DEFAULT 'none' CHECK (dedup IN ('none', 'guest', 'event'));

-- An attempt confirmed as a duplicate points to the media another attempt
-- stored; it has no media of its own. Its object, if it stored one, is
-- deleted (object_deleted, as for expired and rejected attempts).
ALTER TABLE attempts ADD COLUMN duplicate_of TEXT REFERENCES media(id);
CREATE INDEX attempts_duplicates ON attempts (event_id) WHERE duplicate_of IS NOT NULL;

-- Content key -> media, unique per scope: scope_id 0 is the whole event
-- (dedup `event`), a session id is that guest's session (dedup `guest`).
-- The key is the SHA-256 the store verified (one PUT) or the composite of
-- the parts' digests (multipart), lowercase hex. The row is written in the
-- transaction that creates its media (the reference is checked at commit),
-- so two attempts of the same bytes make one media: the second finds the
-- first's row.
CREATE TABLE content_index (
    event_id     INTEGER NOT NULL REFERENCES events(id),
    scope_id     INTEGER NOT NULL,
    content_key  TEXT    NOT NULL,
    media_id     TEXT    NOT NULL REFERENCES media(id) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (event_id, scope_id, content_key)
);

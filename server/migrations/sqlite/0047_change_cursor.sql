-- A festival's size (issue 48): the host's list is read by pages and by
-- what changed, never whole.
--
-- Each event counts its changes (`events.change_seq`); a media record keeps
-- the number of its last change (confirmed, decided, withdrawn, its
-- renditions settled). A change takes the next number under the event
-- row's lock, held to its commit, so within an event the numbers are taken
-- in commit order and a reader that asks for what changed after the last
-- number it saw misses nothing.
ALTER TABLE events ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE media ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
-- The number of its first change (its confirm): a bulk decision takes the
-- media the host had seen, whatever changed in them since (a preview made).
ALTER TABLE media ADD COLUMN created_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX media_changes ON media (event_id, change_seq);
-- The host's pages, all and by moderation state, in upload order (the
-- keyset: created_at, id), and the counts per state (covered by the second:
-- SQLite counts a partial index as covering only if it holds the columns
-- of its own condition).
CREATE INDEX media_listed ON media (event_id, created_at, id) WHERE withdrawn_at IS NULL;
CREATE INDEX media_listed_by_state ON media (event_id, moderation, created_at, id, withdrawn_at) WHERE withdrawn_at IS NULL;

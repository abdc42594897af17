-- A festival's size (issue 48): the bytes an event holds are counted as it
-- goes, not summed over every attempt of the event at each authorize (which
-- grew with the event, under the event's lock). `confirmed_bytes` is what
-- its confirmed attempts stored (duplicates store nothing); the live
-- reservations of its authorized attempts are still summed, by the index
-- (event_id, state), and they are few.
ALTER TABLE events ADD COLUMN confirmed_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE events SET confirmed_bytes = (
    SELECT COALESCE(SUM(a.size), 0) FROM attempts a
    WHERE a.event_id = events.id AND a.state = 'confirmed' AND a.duplicate_of IS NULL);
-- The rendition scanner looks for media without a job among the recent
-- ones only (a confirm makes the job itself; the scan covers an instance
-- that stopped in between), not through every media of every event.
CREATE INDEX media_created ON media (created_at);
-- What a session holds (its quotas at each authorize, its rendition budget,
-- one job per session at a time) was read through every attempt of every
-- event: by session now.
CREATE INDEX attempts_session ON attempts (session_id, state);

-- What grew with the event (issue 48): its bytes, counted as it goes, and
-- the rendition scan (PostgreSQL dialect; see migrations/sqlite/0049_growth_costs.sql).
ALTER TABLE events ADD COLUMN confirmed_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE events SET confirmed_bytes = (
    SELECT COALESCE(SUM(a.size), 0) FROM attempts a
    WHERE a.event_id = events.id AND a.state = 'confirmed' AND a.duplicate_of IS NULL);
CREATE INDEX media_created ON media (created_at);
CREATE INDEX attempts_session ON attempts (session_id, state);

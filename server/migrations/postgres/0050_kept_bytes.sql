-- The byte caps count what is kept (issue 49): a media the host rejected,
-- or its guest withdrew, stops counting at once. The event's running count
-- is recomputed without them; from here the decisions move it.
UPDATE events SET confirmed_bytes = (
    SELECT COALESCE(SUM(a.size), 0) FROM attempts a
    WHERE a.event_id = events.id AND a.state = 'confirmed' AND a.duplicate_of IS NULL
      AND NOT EXISTS (SELECT 1 FROM media m WHERE m.attempt_row_id = a.row_id AND m.moderation = 'rejected'));

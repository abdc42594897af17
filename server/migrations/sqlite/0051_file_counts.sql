-- The caps on files (issue 49): attempts a session and an event were ever
-- asked for, and the media an event keeps (not rejected or withdrawn), as
-- running counts the authorize reads in O(1), whatever the event's size.
ALTER TABLE sessions ADD COLUMN attempt_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN attempt_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN kept_media INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET attempt_count = (SELECT COUNT(*) FROM attempts a WHERE a.session_id = sessions.id);
UPDATE events SET attempt_count = (SELECT COUNT(*) FROM attempts a WHERE a.event_id = events.id),
                  kept_media = (SELECT COUNT(*) FROM media m WHERE m.event_id = events.id AND m.moderation <> 'rejected');

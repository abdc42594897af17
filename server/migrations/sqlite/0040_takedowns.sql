-- Takedowns (issue 15). `rejected_at`: when the host rejected a media (kept
-- while it stays rejected, cleared when approved again); the sweeper deletes
-- the objects of a media rejected longer than the retention, first marking it
-- `removed_at` (no approval brings it back after that), then deleting its
-- original and renditions and setting `objects_deleted`. `events.deleted_at`:
-- the host deleted the event; its credentials stop working at once and its
-- rows and objects are removed (by the request, or by the sweeper when the
-- store failed). Numbered 40 so that branches adding migrations at the same
-- time do not take the same version.
ALTER TABLE media ADD COLUMN rejected_at INTEGER;
ALTER TABLE media ADD COLUMN removed_at INTEGER;
ALTER TABLE media ADD COLUMN objects_deleted BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE media SET rejected_at = COALESCE(moderated_at, created_at) WHERE moderation = 'rejected';
CREATE INDEX media_rejected_at ON media (rejected_at) WHERE rejected_at IS NOT NULL AND removed_at IS NULL;
CREATE INDEX media_removed ON media (removed_at) WHERE removed_at IS NOT NULL AND objects_deleted = FALSE;
ALTER TABLE events ADD COLUMN deleted_at INTEGER;

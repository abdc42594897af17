-- A video's shareable rendition (PostgreSQL dialect; see
-- migrations/sqlite/0046_videos.sql).
ALTER TABLE rendition_jobs ADD COLUMN duration_ms BIGINT;
-- Videos and HEIC photos that earlier versions gave the placeholder are
-- made again.
UPDATE rendition_jobs SET state = 'queued', tries = 0, reason = NULL, due_at = 0
WHERE state = 'placeholder' AND media_id IN (
    SELECT id FROM media WHERE content_type LIKE 'video/%'
        OR content_type IN ('image/heic', 'image/heif', 'image/heic-sequence', 'image/heif-sequence'));
